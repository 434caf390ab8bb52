//! The string table pprof and OTLP share the shape of: every text once, `""` first, referred to
//! by index.

use rustc_hash::FxHashMap;

pub(super) struct StringTable {
    /// The texts, in index order: what the format's `string_table` holds.
    pub table: Vec<Vec<u8>>,
    index: FxHashMap<String, usize>,
}

impl StringTable {
    /// A table holding `""` at index 0, as both formats require.
    pub fn new() -> Self {
        let mut s = StringTable {
            table: Vec::new(),
            index: FxHashMap::default(),
        };
        s.add("");
        s
    }

    /// The index of `text`, added when new.
    pub fn add(&mut self, text: &str) -> usize {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        let i = self.table.len();
        self.table.push(text.as_bytes().to_vec());
        self.index.insert(text.to_owned(), i);
        i
    }
}
