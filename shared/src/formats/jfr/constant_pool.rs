//! A chunk's constant pools: the chain of pool events from the header's offset, each linked to
//! the one before by `delta`. Entries are indexed, not decoded: a value is read from its place
//! when an event first refers to it.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::Result;
use crate::limits::{exceeded, Limits};

use super::metadata::{Kind, Metadata};
use super::reader::Reader;
use super::values::{element, skip_struct};

/// Event type of a constant pool.
pub(crate) const POOL_EVENT: u64 = 1;

/// Where each pool entry's value starts, by (class index, key).
#[derive(Debug, Default)]
pub(crate) struct Pools {
    entries: FxHashMap<(usize, u64), usize>,
}

impl Pools {
    pub(crate) fn get(&self, class: usize, key: u64) -> Option<usize> {
        self.entries.get(&(class, key)).copied()
    }

    /// Indexes the pools of a chunk whose pool records `r` reads, the first at chunk
    /// position `first` (the header's offset); `locate` says where in `r` the record at a
    /// chunk position starts. Entries are positions in `r`.
    pub(crate) fn read(
        metadata: &Metadata,
        r: &Reader<'_>,
        first: u64,
        locate: &dyn Fn(u64) -> Option<usize>,
        limits: &Limits,
    ) -> Result<Pools> {
        let mut pools = Pools::default();
        let mut position = first;
        let mut seen = FxHashSet::default();
        loop {
            if !seen.insert(position) {
                return Err(r.malformed("the constant pools' chain loops"));
            }
            let at = locate(position).ok_or_else(|| {
                r.malformed(format!(
                    "the constant pool chain leads to chunk position {position}, where no \
                     constant pool starts"
                ))
            })?;
            let mut p = r.record(at, "constant pool")?;
            let ty = p.varint()?;
            if ty != POOL_EVENT {
                return Err(r.at(at).malformed(format!(
                    "the constant pool chain leads to an event of type {ty}"
                )));
            }
            p.varint()?; // start time
            p.varint()?; // duration
            let delta = p.varint()? as i64;
            p.u8()?; // flush / checkpoint type
            let types = p.count(2, "constant pool type")?;
            for _ in 0..types {
                let id = p.varint()?;
                let class = metadata.class_index(id).ok_or_else(|| {
                    p.malformed(format!("constant pool of the undeclared class id {id}"))
                })?;
                let n = p.count(1, "constant pool entry")?;
                if (pools.entries.len() + n) as u64 > limits.max_table_entries {
                    return Err(exceeded("max_table_entries", limits.max_table_entries));
                }
                pools.entries.reserve(n);
                for _ in 0..n {
                    let key = p.varint()?;
                    pools.entries.entry((class, key)).or_insert(p.pos());
                    match metadata.classes[class].kind {
                        Kind::Struct => skip_struct(metadata, class, &mut p, 0)?,
                        _ => {
                            element(metadata, class, false, &mut p, 0)?;
                        }
                    }
                }
            }
            if delta == 0 {
                return Ok(pools);
            }
            position = position.checked_add_signed(delta).ok_or_else(|| {
                r.malformed(format!("constant pool delta {delta} leaves the chunk"))
            })?;
        }
    }
}
