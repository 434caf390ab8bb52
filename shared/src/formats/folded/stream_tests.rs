use proptest::prelude::*;

use super::super::austin;
use super::super::dialect::Dialect;
use super::super::importer::Importer;
use super::super::{decode_blocks, series, Lines};
use super::*;
use crate::model::Profile;

/// Folded text decoded the way it was before it was streamed: whole, the most decimals found
/// in a first pass, every weight at that scale in a second. The streamed decoder must give
/// exactly this, profile or error.
fn read_whole(bytes: &[u8], limits: &Limits) -> Result<Profile> {
    let lines = || Lines::new(bytes, limits.max_line_bytes);
    let header = austin::header(bytes);
    let dialect = match header {
        Some(_) => Dialect::Austin,
        None => Dialect::detect(lines().map_while(|l| l.ok()).map(|l| l.stack)),
    };
    let decimals = lines()
        .map_while(|l| l.ok())
        .map(|l| l.count.decimals())
        .max()
        .unwrap_or(0);
    let spec = series(dialect, header.unwrap_or_default())?;
    let austin = dialect == Dialect::Austin;
    if austin {
        if let Some(line) = lines()
            .map_while(|l| l.ok())
            .find(|l| l.count.decimals() > 0)
        {
            return Err(line.error(format!(
                "austin counts are whole microseconds, not {}",
                line.count.text()
            )));
        }
    }
    let mut importer = Importer::new(dialect, spec, limits);
    let (mut samples, mut total) = (0u64, 0i64);
    for line in lines() {
        let line = line?;
        let weight = line.weight(decimals)?;
        if weight != 0 {
            if samples >= limits.max_samples {
                return Err(exceeded("max_samples", limits.max_samples));
            }
            samples += 1;
            total = total.checked_add(weight).ok_or_else(total_exceeded)?;
        }
        importer.line(line.stack, weight)?;
    }
    let unit = if austin {
        "microseconds".to_owned()
    } else {
        scaled_count_unit(decimals)
    };
    Ok(importer.finish(&unit))
}

fn streamed(bytes: &[u8], limits: &Limits, block_bytes: usize) -> Result<Profile> {
    let blocks = Blocks::new(bytes, "none", limits.max_line_bytes).with_block_bytes(block_bytes);
    decode_blocks(blocks, limits)
}

/// Everything a profile says, with names instead of handles.
fn contents(p: &Profile) -> String {
    let samples: Vec<_> = p
        .samples()
        .iter()
        .map(|s| {
            let thread = p.thread(s.thread);
            let process = p.process(thread.process);
            let frames: Vec<_> = s
                .stack
                .map(|leaf| {
                    p.stack_frames(leaf)
                        .map(|f| format!("{:?}", p.frame(f).function.map(|n| p.str(n))))
                        .collect()
                })
                .unwrap_or_else(Vec::new);
            let series = p.series(s.series);
            (
                process.pid,
                process.name.map(|n| p.str(n)),
                thread.tid,
                thread.name.map(|n| p.str(n)),
                frames,
                s.weight,
                p.str(series.name),
                p.str(series.unit),
                series.kind,
                series.period,
            )
        })
        .collect();
    format!("{samples:?} {:?} {:?}", p.stats, p.attributes)
}

fn same(bytes: &[u8], limits: &Limits, block_bytes: usize) {
    let whole = read_whole(bytes, limits);
    let blocks = streamed(bytes, limits, block_bytes);
    match (&whole, &blocks) {
        (Ok(a), Ok(b)) => assert_eq!(
            contents(a),
            contents(b),
            "{}",
            String::from_utf8_lossy(bytes)
        ),
        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{}", String::from_utf8_lossy(bytes)),
        _ => panic!(
            "whole: {whole:?}\nblocks: {blocks:?}\ninput: {}",
            String::from_utf8_lossy(bytes)
        ),
    }
}

#[test]
fn blocks_of_any_size_read_as_the_whole_text() {
    let mut text = String::from("\u{feff}thread (0x1): MainThread;main (a.py:1);f (a.py:2) 3\r\n");
    for i in 0..200 {
        text.push_str(&format!(
            "thread (0x{}): T;main (a.py:1);g{} (a.py:{}) {}\n",
            i % 3,
            i % 17,
            i,
            i % 5
        ));
        if i % 50 == 7 {
            text.push_str("\n# a comment\n");
        }
    }
    // Decimals that rise late, twice.
    text.push_str("thread (0x1): T;main (a.py:1) 0.5\nthread (0x2): T;h (b.py:9) 1.125\n");
    text.push_str("thread (0x1): T;main (a.py:1) 7");
    let limits = Limits::default();
    for block in [1, 2, 3, 7, 64, 1000, 1 << 20] {
        same(text.as_bytes(), &limits, block);
    }
    let p = streamed(text.as_bytes(), &limits, 5).unwrap();
    assert_eq!(p.str(p.series(p.samples().series(0)).unit), "count*1e-3");
    assert_eq!(p.samples().weight(0), 3_000);
}

#[test]
fn errors_name_the_line_they_name_when_read_whole() {
    let limits = Limits {
        max_samples: 3,
        ..Limits::default()
    };
    let cases: &[&str] = &[
        // Fits at scale 0, not at the final scale 1.
        "a 9223372036854775807\nb 1\nc 0.5\n",
        // The total overflows only at the final scale.
        "a 500000000000000000\nb 500000000000000000\nc 0.5\n",
        "a 5000000000000000000\nb 5000000000000000000\n",
        // max_samples after an overflow at the final scale, and without one.
        "a 9223372036854775807\nb 1\nc 1\nd 1\ne 0.5\n",
        "a 1\nb 1\nc 1\nd 1\ne 0.5\n",
        // A line that does not decode, after and before the decimals rise.
        "a 9223372036854775807\nb 0.5\nbad line\n",
        "a 9223372036854775807\nbad line\nb 0.5\n",
        // austin: fractional counts are refused before anything else.
        "# austin: 3.7.0\nP1;T0:1;a.py:f:1 9\nP1;T0:1;a.py:f:1 1.5\n",
        "# austin: 3.7.0\n# mode: memory\nP1;T0:1;a.py:f:1 9\n",
    ];
    for text in cases {
        for block in [1, 4, 1 << 20] {
            same(text.as_bytes(), &limits, block);
        }
        assert!(streamed(text.as_bytes(), &limits, 1).is_err(), "{text}");
    }
}

fn line() -> impl Strategy<Value = String> {
    let stack = proptest::collection::vec(prop_oneof![Just("a"), Just("b"), Just("c;d")], 0..4)
        .prop_map(|f| f.join(";"));
    let count = prop_oneof![
        4 => (0u64..1000).prop_map(|n| n.to_string()),
        2 => (0u64..1000, 1usize..4).prop_map(|(n, d)| format!("{}.{:0d$}", n / 10, n % 10, d = d)),
        1 => Just("9223372036854775807".to_owned()),
        1 => Just("4611686018427387904".to_owned()),
        1 => Just("92233720368547758.07".to_owned()),
    ];
    prop_oneof![
        12 => (stack, count).prop_map(|(s, c)| format!("{s} {c}")),
        1 => Just(String::new()),
        1 => Just("# note".to_owned()),
        1 => Just("no count here".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_text_reads_in_blocks_as_it_reads_whole(
        lines in proptest::collection::vec(line(), 0..40),
        block in 1usize..64,
        max_samples in 1u64..40,
        crlf: bool,
    ) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        let limits = Limits { max_samples, ..Limits::default() };
        same(text.as_bytes(), &limits, block);
    }
}
