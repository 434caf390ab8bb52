//! Where a conversion's objects go as they are produced: straight to a store, or to memory.
//! Every object is listed for the manifest as it passes, and the manifest, built from that
//! list, is written last, so a manifest is never seen before the objects it lists.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::build_id_index::BuildIdIndexEntry;
use super::manifest::{Manifest, ManifestOutput};
use crate::error::{to_io, Result};
use crate::sample_v2::{PreparedChunk, SampleV2Chunk};
use crate::store::{chunk_key, from_io, pending_conversion_key, ObjectStore};
use crate::tables::{EncodeTable, Table, TableSink};

/// What writes one object into the writer it is given.
pub type WriteObject<'a> = dyn FnMut(&mut dyn Write) -> io::Result<()> + 'a;

/// Takes each produced object.
pub trait OutputSink {
    /// Stores one object.
    fn put(&mut self, key: &str, bytes: Vec<u8>) -> Result<()>;
    /// Stores the object `write` produces, streamed to its destination as it is written.
    fn put_with(&mut self, key: &str, write: &mut WriteObject<'_>) -> Result<()>;
    /// Says which objects outside the conversion's own folder are about to be written, before
    /// any is: a store records them, so that a job cut short can still be cleaned up.
    fn intend(&mut self, _keys: &[&str]) -> Result<()> {
        Ok(())
    }
}

/// The record of a conversion that has started: which outputs outside its own folder it
/// writes. A conversion cut short by a failure, whose content is then replaced, leaves outputs
/// no manifest lists; the job that converts the key's new content removes them by this record
/// (see `supersede`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingConversion {
    /// The conversion.
    pub source_id: String,
    /// The upload it converts: the sweep checks whether the key still holds that content.
    /// Empty in records of writers before it was added.
    #[serde(default)]
    pub source_key: String,
    /// Table files and build-ID index entries it writes (its manifest and chunks are in its
    /// own folder).
    pub outputs: Vec<String>,
}

impl PendingConversion {
    /// Records, before anything else is written, that `source_id`, the conversion of the
    /// upload at `source_key`, has started.
    pub fn start(store: &dyn ObjectStore, source_key: &str, source_id: &str) -> Result<()> {
        PendingConversion::write(store, source_key, source_id, &[])
    }

    fn write(
        store: &dyn ObjectStore,
        source_key: &str,
        source_id: &str,
        outputs: &[&str],
    ) -> Result<()> {
        let record = PendingConversion {
            source_id: source_id.to_owned(),
            source_key: source_key.to_owned(),
            outputs: outputs.iter().map(|&k| k.to_owned()).collect(),
        };
        let json = serde_json::to_vec_pretty(&record).expect("a pending record serializes");
        store.put(&pending_conversion_key(source_key, source_id), &json)
    }
}

/// Keeps the objects in memory, in write order (tests, and callers that store later).
#[derive(Debug, Default)]
pub struct MemoryOutputs {
    /// Key and bytes of every object, the manifest last.
    pub objects: Vec<(String, Vec<u8>)>,
}

impl OutputSink for MemoryOutputs {
    fn put(&mut self, key: &str, bytes: Vec<u8>) -> Result<()> {
        self.objects.push((key.to_owned(), bytes));
        Ok(())
    }

    fn put_with(&mut self, key: &str, write: &mut WriteObject<'_>) -> Result<()> {
        let mut bytes = Vec::new();
        write(&mut bytes).map_err(|e| from_io(key, e))?;
        self.put(key, bytes)
    }
}

/// Writes each object to a store as soon as it is produced, so a conversion never holds all
/// of its outputs at once.
pub struct StoreOutputs<'s> {
    store: &'s dyn ObjectStore,
    written: Vec<String>,
    /// The upload key and source id of the conversion, if it keeps a pending record.
    pending: Option<(String, String)>,
}

impl<'s> StoreOutputs<'s> {
    /// Outputs into `store`.
    pub fn new(store: &'s dyn ObjectStore) -> Self {
        StoreOutputs {
            store,
            written: Vec::new(),
            pending: None,
        }
    }

    /// Outputs into `store` of the conversion `source_id` of the upload at `source_key`,
    /// whose pending record (written by [`PendingConversion::start`]) is brought up to date
    /// with the outputs it is about to write.
    pub fn pending(store: &'s dyn ObjectStore, source_key: &str, source_id: &str) -> Self {
        StoreOutputs {
            pending: Some((source_key.to_owned(), source_id.to_owned())),
            ..StoreOutputs::new(store)
        }
    }

    /// How many objects were written.
    pub fn written(&self) -> usize {
        self.written.len()
    }

    /// Deletes what was written: a conversion that failed half-way leaves no orphans.
    pub fn discard(&mut self) -> Result<()> {
        for key in self.written.drain(..) {
            self.store.delete(&key)?;
        }
        Ok(())
    }
}

impl OutputSink for StoreOutputs<'_> {
    fn put(&mut self, key: &str, bytes: Vec<u8>) -> Result<()> {
        self.store.put(key, &bytes)?;
        self.written.push(key.to_owned());
        Ok(())
    }

    fn intend(&mut self, keys: &[&str]) -> Result<()> {
        match &self.pending {
            Some((key, source_id)) => PendingConversion::write(self.store, key, source_id, keys),
            None => Ok(()),
        }
    }

    fn put_with(&mut self, key: &str, write: &mut WriteObject<'_>) -> Result<()> {
        // Unbuffered: writers hand over large blocks (a chunk's serializer buffers its own
        // tokens), and the stores' writers buffer what they send.
        let mut writer = self.store.put_writer(key)?;
        write(&mut writer).map_err(|e| from_io(key, e))?;
        writer.finish()?;
        self.written.push(key.to_owned());
        Ok(())
    }
}

/// Counts and hashes the bytes on their way to `inner`, for the manifest's listing.
struct Listing<'w> {
    inner: &'w mut dyn Write,
    sha256: Sha256,
    bytes: u64,
}

impl Write for Listing<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sha256.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Lists every object for the manifest on its way to the sink.
pub(crate) struct Outputs<'s> {
    sink: &'s mut dyn OutputSink,
    listed: Vec<ManifestOutput>,
}

fn listed(key: &str, kind: String, bytes: &[u8]) -> ManifestOutput {
    let sha256 = hex::encode(Sha256::digest(bytes));
    listed_as(key, kind, bytes.len() as u64, sha256)
}

/// The listing of an object of `bytes` bytes whose SHA-256 is `sha256`.
fn listed_as(key: &str, kind: String, bytes: u64, sha256: String) -> ManifestOutput {
    ManifestOutput {
        key: key.to_owned(),
        kind,
        bytes,
        sha256,
        pid: None,
        chunk_id: None,
        samples: None,
        start_ns: None,
        end_ns: None,
        rows: None,
    }
}

impl<'s> Outputs<'s> {
    /// Passes on which tables and index entries are about to be written (see
    /// [`OutputSink::intend`]).
    pub fn intend<'k>(&mut self, keys: impl IntoIterator<Item = &'k String>) -> Result<()> {
        let keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
        self.sink.intend(&keys)
    }

    pub fn new(sink: &'s mut dyn OutputSink) -> Self {
        Outputs {
            sink,
            listed: Vec::new(),
        }
    }

    /// One Sample v2 chunk of the upload `source_id`. Its JSON moves into the sink; the rest
    /// of it stays, for the tables.
    pub fn chunk(&mut self, source_id: &str, chunk: &mut SampleV2Chunk) -> Result<()> {
        let key = chunk_key(source_id, &chunk.chunk_id);
        let json = std::mem::take(&mut chunk.json);
        self.listed.push(ManifestOutput {
            pid: chunk.pid,
            samples: Some(chunk.samples as u64),
            start_ns: Some(chunk.start_ns),
            end_ns: Some(chunk.end_ns),
            chunk_id: Some(chunk.chunk_id.clone()),
            ..listed(&key, "sample_v2".into(), &json)
        });
        self.sink.put(&key, json)
    }

    /// One Sample v2 chunk, serialized straight into the sink.
    pub fn prepared_chunk(&mut self, source_id: &str, chunk: &PreparedChunk<'_>) -> Result<()> {
        let key = chunk_key(source_id, chunk.chunk_id());
        let (bytes, sha256) = self.put_listed(&key, &mut |w| chunk.write_to(w))?;
        let info = chunk.info();
        self.listed.push(ManifestOutput {
            pid: info.pid,
            chunk_id: Some(chunk.chunk_id().to_owned()),
            samples: Some(info.samples as u64),
            start_ns: Some(info.start_ns),
            end_ns: Some(info.end_ns),
            ..listed_as(&key, "sample_v2".into(), bytes, sha256)
        });
        Ok(())
    }

    /// Streams what `write` writes into the sink at `key`; gives its size and SHA-256.
    fn put_listed(&mut self, key: &str, write: &mut WriteObject<'_>) -> Result<(u64, String)> {
        let mut listed = (0, String::new());
        self.sink.put_with(key, &mut |w: &mut dyn Write| {
            let mut listing = Listing {
                inner: w,
                sha256: Sha256::new(),
                bytes: 0,
            };
            write(&mut listing)?;
            listed = (listing.bytes, hex::encode(listing.sha256.finalize()));
            Ok(())
        })?;
        Ok(listed)
    }

    /// One table file of `table` at `key`, streamed into the sink as `encode` writes it.
    pub fn table(&mut self, table: Table, key: &str, encode: &mut EncodeTable<'_>) -> Result<()> {
        let mut rows = 0;
        let (bytes, sha256) = self.put_listed(key, &mut |w: &mut dyn Write| {
            rows = encode(w).map_err(to_io)?;
            Ok(())
        })?;
        self.listed.push(ManifestOutput {
            rows: Some(rows),
            ..listed_as(key, format!("table:{}", table.name()), bytes, sha256)
        });
        Ok(())
    }

    /// The outputs as the tables' sink; `index`'s keys are told with the tables' (the index
    /// entries follow the tables).
    pub fn tables<'o>(
        &'o mut self,
        index: &'o [(String, BuildIdIndexEntry)],
    ) -> TableOutputs<'o, 's> {
        TableOutputs { out: self, index }
    }

    /// One build-ID index entry.
    pub fn index_entry(&mut self, key: &str, entry: &BuildIdIndexEntry) -> Result<()> {
        let json = serde_json::to_vec_pretty(entry).expect("index entry serializes");
        self.listed
            .push(listed(key, "build_id_index".into(), &json));
        self.sink.put(key, json)
    }

    /// Writes the manifest, last, with the list of everything before it.
    pub fn finish(self, key: &str, mut manifest: Manifest) -> Result<Manifest> {
        manifest.outputs = self.listed;
        let json = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
        self.sink.put(key, json)?;
        Ok(manifest)
    }
}

/// [`Outputs`] as where the tables go.
pub(crate) struct TableOutputs<'o, 's> {
    out: &'o mut Outputs<'s>,
    index: &'o [(String, BuildIdIndexEntry)],
}

impl TableSink for TableOutputs<'_, '_> {
    fn intend(&mut self, keys: &[String]) -> Result<()> {
        let index = self.index.iter().map(|(key, _)| key);
        self.out.intend(keys.iter().chain(index))
    }

    fn put(&mut self, table: Table, key: &str, encode: &mut EncodeTable<'_>) -> Result<()> {
        self.out.table(table, key, encode)
    }
}
