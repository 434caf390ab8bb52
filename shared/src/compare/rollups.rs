//! The rollup rows of the two releases compared, read from a `function_rollup` batch: one
//! list per series (sample type and unit), as releases are compared series by series.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};

use super::flags::{RollupRow, Side};
use crate::error::{ErrorKind, Result};
use crate::tables::Projection;

/// Which uploads are compared: one service (in one environment, or all), two releases.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Selection<'s> {
    pub service: &'s str,
    pub environment: Option<&'s str>,
    pub base: &'s str,
    pub head: &'s str,
}

/// One rollup row, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub upload: String,
    pub side: Side,
    pub function: String,
    pub self_value: i64,
    pub total_value: i64,
    pub self_rows: i64,
}

impl Row {
    pub fn borrowed(&self) -> RollupRow<'_> {
        RollupRow {
            upload: &self.upload,
            side: self.side,
            function: &self.function,
            self_value: self.self_value,
            total_value: self.total_value,
            self_rows: self.self_rows,
        }
    }
}

/// The columns of `function_rollup` a comparison reads.
pub(crate) const PROJECTION: Projection<'static> = Projection {
    columns: &COLUMNS,
    dictionary: &[],
    skip_null_columns: false,
};

const COLUMNS: [&str; 10] = [
    "source_id",
    "service",
    "release",
    "environment",
    "sample_type",
    "sample_unit",
    "function",
    "self_value",
    "total_value",
    "self_rows",
];

/// Row `i` of a text column, `None` when null.
fn get(column: &arrow_array::StringArray, i: usize) -> Option<&str> {
    (!column.is_null(i)).then(|| column.value(i))
}

/// The rows of the selected uploads, by series (`sample_type`, `sample_unit`), in a fixed
/// order.
pub(crate) fn select(
    batch: &RecordBatch,
    selection: &Selection<'_>,
) -> Result<BTreeMap<(String, String), Vec<Row>>> {
    let text = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| column_error(name))
    };
    let int = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or_else(|| column_error(name))
    };
    let (source, service, release, environment) = (
        text("source_id")?,
        text("service")?,
        text("release")?,
        text("environment")?,
    );
    let (sample_type, sample_unit, function) = (
        text("sample_type")?,
        text("sample_unit")?,
        text("function")?,
    );
    let (self_value, total_value, self_rows) =
        (int("self_value")?, int("total_value")?, int("self_rows")?);
    let mut series: BTreeMap<(String, String), Vec<Row>> = BTreeMap::new();
    for i in 0..batch.num_rows() {
        if get(service, i) != Some(selection.service) {
            continue;
        }
        if selection.environment.is_some() && get(environment, i) != selection.environment {
            continue;
        }
        let side = match get(release, i) {
            Some(r) if r == selection.base => Side::Base,
            Some(r) if r == selection.head => Side::Head,
            _ => continue,
        };
        let key = (
            sample_type.value(i).to_owned(),
            sample_unit.value(i).to_owned(),
        );
        series.entry(key).or_default().push(Row {
            upload: source.value(i).to_owned(),
            side,
            function: function.value(i).to_owned(),
            self_value: self_value.value(i),
            total_value: total_value.value(i),
            self_rows: self_rows.value(i),
        });
    }
    Ok(series)
}

pub(super) fn column_error(name: &str) -> crate::Error {
    ErrorKind::Malformed {
        format: "function_rollup",
        offset: 0,
        what: format!("the table has no {name} column of its type"),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, StringArray, TimestampMicrosecondArray};

    use super::*;
    use crate::tables::Table;

    /// (source, service, release, environment, sample type, function, self value).
    type Line<'a> = (
        &'a str,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        &'a str,
        &'a str,
        i64,
    );

    /// A `function_rollup` batch of the given rows.
    fn batch(rows: &[Line<'_>]) -> RecordBatch {
        let schema = Table::FunctionRollup.schema();
        let text = |f: &dyn Fn(&Line<'_>) -> Option<String>| {
            Arc::new(rows.iter().map(f).collect::<StringArray>()) as ArrayRef
        };
        let ints = |f: &dyn Fn(&Line<'_>) -> i64| {
            Arc::new(rows.iter().map(f).collect::<Int64Array>()) as ArrayRef
        };
        let hour = TimestampMicrosecondArray::from(vec![0i64; rows.len()]);
        let hour = match schema.field_with_name("hour").unwrap().data_type() {
            arrow_schema::DataType::Timestamp(_, zone) => hour.with_timezone_opt(zone.clone()),
            other => panic!("hour is {other}"),
        };
        RecordBatch::try_new(
            schema,
            vec![
                text(&|r| Some(r.0.to_owned())),
                Arc::new(hour),
                text(&|r| Some(r.1.to_owned())),
                text(&|r| r.2.map(str::to_owned)),
                text(&|r| r.3.map(str::to_owned)),
                text(&|_| Some("java".to_owned())),
                text(&|r| Some(r.4.to_owned())),
                text(&|_| Some("nanoseconds".to_owned())),
                text(&|r| Some(r.5.to_owned())),
                ints(&|r| r.6),
                ints(&|r| r.6 * 2),
                ints(&|r| r.6 / 10),
                ints(&|r| r.6 / 10),
            ],
        )
        .unwrap()
    }

    #[test]
    fn rows_of_the_service_environment_and_two_releases_by_series() {
        let b = batch(&[
            ("u1", "shop", Some("1.0"), Some("prod"), "cpu", "main", 100),
            ("u2", "shop", Some("1.1"), Some("prod"), "cpu", "main", 120),
            ("u2", "shop", Some("1.1"), Some("prod"), "alloc", "new", 7),
            ("u3", "shop", Some("1.2"), Some("prod"), "cpu", "main", 1),
            ("u4", "cart", Some("1.0"), Some("prod"), "cpu", "main", 1),
            ("u5", "shop", Some("1.0"), Some("staging"), "cpu", "main", 1),
            ("u6", "shop", None, Some("prod"), "cpu", "main", 1),
        ]);
        let selection = Selection {
            service: "shop",
            environment: Some("prod"),
            base: "1.0",
            head: "1.1",
        };
        let series = select(&b, &selection).unwrap();
        let keys: Vec<_> = series.keys().map(|(t, _)| t.as_str()).collect();
        assert_eq!(keys, ["alloc", "cpu"]);
        let cpu = &series[&("cpu".to_owned(), "nanoseconds".to_owned())];
        let uploads: Vec<_> = cpu.iter().map(|r| (r.upload.as_str(), r.side)).collect();
        assert_eq!(uploads, [("u1", Side::Base), ("u2", Side::Head)]);
        assert_eq!(
            (cpu[1].self_value, cpu[1].total_value, cpu[1].self_rows),
            (120, 240, 12)
        );
        // Every environment when none is named.
        let all = Selection {
            environment: None,
            ..selection
        };
        let cpu = &select(&b, &all).unwrap()[&("cpu".to_owned(), "nanoseconds".to_owned())];
        assert_eq!(cpu.len(), 3);
    }
}
