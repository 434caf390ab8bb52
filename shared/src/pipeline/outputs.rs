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
use crate::store::{chunk_key, from_io, pending_conversion_key, ObjectStore, ObjectWriter};
use crate::tables::{FileId, Table, TableSink};

/// An object open in a sink, as the sink numbers it.
pub type ObjectId = usize;

/// Takes each produced object.
pub trait OutputSink {
    /// Stores one object.
    fn put(&mut self, key: &str, bytes: Vec<u8>) -> Result<()>;
    /// Opens an object to be written piece by piece, while other objects are written.
    fn open(&mut self, key: &str) -> Result<ObjectId>;
    /// Appends bytes to an open object, sent on to its destination as they come.
    fn write(&mut self, object: ObjectId, bytes: &[u8]) -> Result<()>;
    /// Finishes an open object: it appears at its key now.
    fn close(&mut self, object: ObjectId) -> Result<()>;
    /// Says which objects outside the conversion's own folder are about to be written, before
    /// any is: a store records them in the conversion's [`PendingConversion`] record, so that a
    /// job cut short can still be cleaned up.
    fn record_pending(&mut self, _keys: &[&str]) -> Result<()> {
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

/// Keeps the objects in memory, in the order they are finished (tests, and callers that
/// store later).
#[derive(Debug, Default)]
pub struct MemoryOutputs {
    /// Key and bytes of every object, the manifest last.
    pub objects: Vec<(String, Vec<u8>)>,
    open: Vec<Option<(String, Vec<u8>)>>,
}

impl OutputSink for MemoryOutputs {
    fn put(&mut self, key: &str, bytes: Vec<u8>) -> Result<()> {
        self.objects.push((key.to_owned(), bytes));
        Ok(())
    }

    fn open(&mut self, key: &str) -> Result<ObjectId> {
        self.open.push(Some((key.to_owned(), Vec::new())));
        Ok(self.open.len() - 1)
    }

    fn write(&mut self, object: ObjectId, bytes: &[u8]) -> Result<()> {
        let (_, open) = self.open[object].as_mut().expect("written while open");
        open.extend_from_slice(bytes);
        Ok(())
    }

    fn close(&mut self, object: ObjectId) -> Result<()> {
        let done = self.open[object].take().expect("closed once");
        self.objects.push(done);
        Ok(())
    }
}

/// Writes each object to a store as soon as it is produced, so a conversion never holds all
/// of its outputs at once.
pub struct StoreOutputs<'s> {
    store: &'s dyn ObjectStore,
    written: Vec<String>,
    open: Vec<Option<(String, Box<dyn ObjectWriter + 's>)>>,
    /// The upload key and source id of the conversion, if it keeps a pending record.
    pending: Option<(String, String)>,
}

impl<'s> StoreOutputs<'s> {
    /// Outputs into `store`.
    pub fn new(store: &'s dyn ObjectStore) -> Self {
        StoreOutputs {
            store,
            written: Vec::new(),
            open: Vec::new(),
            pending: None,
        }
    }

    /// Outputs into `store` of the conversion `source_id` of the upload at `source_key`,
    /// whose pending record (written when the job started) is brought up to date
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
    /// Objects still open are dropped unfinished, which leaves nothing of them.
    pub fn discard(&mut self) -> Result<()> {
        self.open.clear();
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

    fn record_pending(&mut self, keys: &[&str]) -> Result<()> {
        match &self.pending {
            Some((key, source_id)) => PendingConversion::write(self.store, key, source_id, keys),
            None => Ok(()),
        }
    }

    // Unbuffered: writers hand over large blocks (a chunk's serializer buffers its own
    // tokens, the Parquet encoder whole pages), and the stores' writers buffer what they send.
    fn open(&mut self, key: &str) -> Result<ObjectId> {
        let writer = self.store.put_writer(key)?;
        self.open.push(Some((key.to_owned(), writer)));
        Ok(self.open.len() - 1)
    }

    fn write(&mut self, object: ObjectId, bytes: &[u8]) -> Result<()> {
        let (key, writer) = self.open[object].as_mut().expect("written while open");
        writer.write_all(bytes).map_err(|e| from_io(key, e))
    }

    fn close(&mut self, object: ObjectId) -> Result<()> {
        let (key, writer) = self.open[object].take().expect("closed once");
        writer.finish()?;
        self.written.push(key);
        Ok(())
    }
}

/// Lists every object for the manifest on its way to the sink.
pub(crate) struct Outputs<'s> {
    sink: &'s mut dyn OutputSink,
    listed: Vec<ManifestOutput>,
    /// Open objects by the ids handed out: the sink's id, the key, the hash and size so far.
    open: Vec<Option<OpenListing>>,
}

/// An object being listed as it is written.
struct OpenListing {
    object: ObjectId,
    key: String,
    /// What the manifest lists it as.
    kind: String,
    sha256: Sha256,
    bytes: u64,
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
    /// [`OutputSink::record_pending`]).
    pub fn record_pending<'k>(&mut self, keys: impl IntoIterator<Item = &'k String>) -> Result<()> {
        let keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
        self.sink.record_pending(&keys)
    }

    pub fn new(sink: &'s mut dyn OutputSink) -> Self {
        Outputs {
            sink,
            listed: Vec::new(),
            open: Vec::new(),
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
        let id = self.open(&key, "sample_v2".into())?;
        let mut out = ListedObject { out: self, id };
        chunk.write_to(&mut out).map_err(|e| from_io(&key, e))?;
        let info = chunk.info();
        self.close(id, |listed| ManifestOutput {
            pid: info.pid,
            chunk_id: Some(chunk.chunk_id().to_owned()),
            samples: Some(info.samples as u64),
            start_ns: Some(info.start_ns),
            end_ns: Some(info.end_ns),
            ..listed
        })
    }

    /// Opens an object at `key`, listed as `kind`, that stays open while others are written.
    fn open(&mut self, key: &str, kind: String) -> Result<usize> {
        let object = self.sink.open(key)?;
        self.open.push(Some(OpenListing {
            object,
            key: key.to_owned(),
            kind,
            sha256: Sha256::new(),
            bytes: 0,
        }));
        Ok(self.open.len() - 1)
    }

    fn write(&mut self, id: usize, bytes: &[u8]) -> Result<()> {
        let open = self.open[id].as_mut().expect("written while open");
        open.sha256.update(bytes);
        open.bytes += bytes.len() as u64;
        self.sink.write(open.object, bytes)
    }

    /// Finishes an open object and lists it as `describe` completes its listing.
    fn close(
        &mut self,
        id: usize,
        describe: impl FnOnce(ManifestOutput) -> ManifestOutput,
    ) -> Result<()> {
        let open = self.open[id].take().expect("closed once");
        self.sink.close(open.object)?;
        let sha256 = hex::encode(open.sha256.finalize());
        let listed = listed_as(&open.key, open.kind, open.bytes, sha256);
        self.listed.push(describe(listed));
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

/// [`Outputs`] as where the tables go. It holds no state of its own, so one may be made for
/// each call while files stay open in the outputs.
pub(crate) struct TableOutputs<'o, 's> {
    out: &'o mut Outputs<'s>,
    index: &'o [(String, BuildIdIndexEntry)],
}

impl TableSink for TableOutputs<'_, '_> {
    fn record_pending(&mut self, keys: &[String]) -> Result<()> {
        let index = self.index.iter().map(|(key, _)| key);
        self.out.record_pending(keys.iter().chain(index))
    }

    fn open(&mut self, table: Table, key: &str) -> Result<FileId> {
        self.out.open(key, format!("table:{}", table.name()))
    }

    fn write(&mut self, file: FileId, bytes: &[u8]) -> Result<()> {
        self.out.write(file, bytes)
    }

    fn close(&mut self, file: FileId, rows: u64) -> Result<()> {
        self.out.close(file, |listed| ManifestOutput {
            rows: Some(rows),
            ..listed
        })
    }
}

/// An object open in [`Outputs`] as a writer.
struct ListedObject<'o, 's> {
    out: &'o mut Outputs<'s>,
    id: usize,
}

impl Write for ListedObject<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(self.id, buf).map_err(to_io)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
