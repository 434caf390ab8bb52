//! Where a conversion's objects go as they are produced: straight to a store, or to memory.
//! Every object is hashed and listed for the manifest as it passes, and the manifest, built
//! from that list, is written last, so a manifest is never seen before the objects it lists.
//!
//! The table files go through a lane of their own (a sink the conversion's sink makes for
//! them, [`OutputSink::lane`]), so the tables can be encoded on another thread while the
//! Sample v2 chunks are written. Table files are only ever closed, and so listed, after every
//! chunk (at the tables' finish), when the lane joins the main sink again: the listing, and the
//! order the objects are stored in, are those of writing everything on one thread.
//! The later half of a window's chunks may go through a lane too ([`ChunkOutputs::beside`]),
//! listed after the first half once both are written.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::build_id_index::BuildIdIndexEntry;
use super::manifest::{Manifest, ManifestOutput};
use super::tables::TableOutputs;
use crate::error::{to_io, Result};
use crate::store::{chunk_key, from_io, pending_conversion_key, ObjectStore, ObjectWriter};
use crate::writers::sample_v2::{PreparedChunk, SampleV2Chunk};

/// An object open in a sink, as the sink numbers it.
pub(crate) type ObjectId = usize;

/// Takes each produced object. `'st` is how long what it writes into (a store) lives, which
/// a lane may borrow too.
pub(crate) trait OutputSink<'st>: Send {
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
    /// A sink for objects written at the same time as this one's, on another thread; what it
    /// wrote becomes this sink's at [`join`](OutputSink::join).
    fn lane(&self) -> Box<dyn OutputSink<'st> + 'st>;
    /// What this sink, a lane, wrote: the objects it holds, or the keys it stored.
    fn into_written(self: Box<Self>) -> Vec<Written>;
    /// Takes what a lane of this sink wrote, as written after everything this sink holds.
    fn join(&mut self, written: Vec<Written>);
}

/// An object a lane wrote, handed back to the sink it came from.
pub(crate) enum Written {
    /// Stored at its key.
    Stored(String),
    /// Held in memory: its key and bytes.
    Held(String, Vec<u8>),
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
pub(crate) struct MemoryOutputs {
    /// Key and bytes of every object, the manifest last.
    pub objects: Vec<(String, Vec<u8>)>,
    open: Vec<Option<(String, Vec<u8>)>>,
}

impl<'st> OutputSink<'st> for MemoryOutputs {
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

    fn lane(&self) -> Box<dyn OutputSink<'st> + 'st> {
        Box::new(MemoryOutputs::default())
    }

    fn into_written(self: Box<Self>) -> Vec<Written> {
        let held = self.objects.into_iter();
        held.map(|(key, bytes)| Written::Held(key, bytes)).collect()
    }

    fn join(&mut self, written: Vec<Written>) {
        for object in written {
            match object {
                Written::Held(key, bytes) => self.objects.push((key, bytes)),
                Written::Stored(key) => unreachable!("a memory lane stored {key}"),
            }
        }
    }
}

/// Writes each object to a store as soon as it is produced, so a conversion never holds all
/// of its outputs at once.
pub(crate) struct StoreOutputs<'s> {
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

impl<'s> OutputSink<'s> for StoreOutputs<'s> {
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

    fn lane(&self) -> Box<dyn OutputSink<'s> + 's> {
        Box::new(StoreOutputs::new(self.store))
    }

    fn into_written(self: Box<Self>) -> Vec<Written> {
        self.written.into_iter().map(Written::Stored).collect()
    }

    fn join(&mut self, written: Vec<Written>) {
        for object in written {
            match object {
                Written::Stored(key) => self.written.push(key),
                Written::Held(key, _) => unreachable!("a store lane held {key}"),
            }
        }
    }
}

/// Hashes and lists every object for the manifest on its way to the sink: the chunks, the
/// build-ID index and the manifest through the conversion's own sink, the table files through
/// a lane of it, which joins it once they are all closed (see the module's docs).
pub(crate) struct Outputs<'o, 'st> {
    sink: &'o mut dyn OutputSink<'st>,
    listing: Listing,
    /// The tables' lane, until it joins the sink.
    tables: Option<(Box<dyn OutputSink<'st> + 'st>, Listing)>,
}

/// The objects listed so far, and those open.
#[derive(Default)]
pub(super) struct Listing {
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

impl Listing {
    /// Opens an object at `key` in `sink`, listed as `kind`, that stays open while others are
    /// written.
    pub(super) fn open(
        &mut self,
        sink: &mut dyn OutputSink<'_>,
        key: &str,
        kind: String,
    ) -> Result<usize> {
        let object = sink.open(key)?;
        self.open.push(Some(OpenListing {
            object,
            key: key.to_owned(),
            kind,
            sha256: Sha256::new(),
            bytes: 0,
        }));
        Ok(self.open.len() - 1)
    }

    pub(super) fn write(
        &mut self,
        sink: &mut dyn OutputSink<'_>,
        id: usize,
        bytes: &[u8],
    ) -> Result<()> {
        let open = self.open[id].as_mut().expect("written while open");
        open.sha256.update(bytes);
        open.bytes += bytes.len() as u64;
        sink.write(open.object, bytes)
    }

    /// Finishes an open object and lists it as `describe` completes its listing.
    pub(super) fn close(
        &mut self,
        sink: &mut dyn OutputSink<'_>,
        id: usize,
        describe: impl FnOnce(ManifestOutput) -> ManifestOutput,
    ) -> Result<()> {
        let open = self.open[id].take().expect("closed once");
        sink.close(open.object)?;
        let sha256 = hex::encode(open.sha256.finalize());
        let listed = listed_as(&open.key, open.kind, open.bytes, sha256);
        self.listed.push(describe(listed));
        Ok(())
    }
}

/// The outputs where the Sample v2 chunks go, apart from the tables' lane.
pub(crate) struct ChunkOutputs<'a, 'st> {
    sink: &'a mut dyn OutputSink<'st>,
    listing: &'a mut Listing,
}

impl<'o, 'st> Outputs<'o, 'st> {
    pub fn new(sink: &'o mut dyn OutputSink<'st>) -> Self {
        let lane = sink.lane();
        Outputs {
            sink,
            listing: Listing::default(),
            tables: Some((lane, Listing::default())),
        }
    }

    /// Passes on which tables and index entries are about to be written (see
    /// [`OutputSink::record_pending`]).
    pub fn record_pending<'k>(&mut self, keys: impl IntoIterator<Item = &'k String>) -> Result<()> {
        let keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
        self.sink.record_pending(&keys)
    }

    /// Where the chunks go, and where the tables go, to be written at the same time.
    pub fn split(&mut self) -> (ChunkOutputs<'_, 'st>, TableOutputs<'_, 'st>) {
        let (lane, listing) = self.tables.as_mut().expect("the tables' lane is open");
        let chunks = ChunkOutputs {
            sink: &mut *self.sink,
            listing: &mut self.listing,
        };
        (
            chunks,
            TableOutputs {
                sink: &mut **lane,
                listing,
            },
        )
    }

    /// Where the chunks go.
    pub fn chunks(&mut self) -> ChunkOutputs<'_, 'st> {
        self.split().0
    }

    /// Where the tables go.
    pub fn tables(&mut self) -> TableOutputs<'_, 'st> {
        self.split().1
    }

    /// Takes the tables' lane back into the sink, once every table file is closed: they are
    /// listed, and stored, after every chunk.
    pub fn join_tables(&mut self) {
        if let Some((lane, listing)) = self.tables.take() {
            self.sink.join(lane.into_written());
            self.listing.listed.extend(listing.listed);
        }
    }

    /// One build-ID index entry.
    pub fn index_entry(&mut self, key: &str, entry: &BuildIdIndexEntry) -> Result<()> {
        let json = serde_json::to_vec_pretty(entry).expect("index entry serializes");
        self.listing
            .listed
            .push(listed(key, "build_id_index".into(), &json));
        self.sink.put(key, json)
    }

    /// Writes the manifest, last, with the list of everything before it.
    pub fn finish(mut self, key: &str, mut manifest: Manifest) -> Result<Manifest> {
        self.join_tables();
        manifest.outputs = std::mem::take(&mut self.listing.listed);
        let json = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
        self.sink.put(key, json)?;
        Ok(manifest)
    }
}

impl Drop for Outputs<'_, '_> {
    /// A conversion that fails still hands what the tables' lane stored to the sink, so that
    /// discarding the sink's objects removes them too.
    fn drop(&mut self) {
        self.join_tables();
    }
}

impl<'st> ChunkOutputs<'_, 'st> {
    /// One Sample v2 chunk of the upload `source_id`. Its JSON moves into the sink; the rest
    /// of it stays, for the tables.
    pub fn chunk(&mut self, source_id: &str, chunk: &mut SampleV2Chunk) -> Result<()> {
        let key = chunk_key(source_id, &chunk.chunk_id);
        let json = std::mem::take(&mut chunk.json);
        self.listing.listed.push(ManifestOutput {
            pid: chunk.pid,
            samples: Some(chunk.samples as u64),
            start_ns: Some(chunk.start_ns),
            end_ns: Some(chunk.end_ns),
            chunk_id: Some(chunk.chunk_id.clone()),
            ..listed(&key, "sample_v2".into(), &json)
        });
        self.sink.put(&key, json)
    }

    /// Runs `write` with these outputs and a lane of them, for chunks written at the same
    /// time on another thread: what the lane wrote is listed, and stored, after what these
    /// outputs did, even when `write` fails (so discarding the outputs removes it too).
    pub fn beside<R>(
        &mut self,
        write: impl FnOnce(&mut ChunkOutputs<'_, 'st>, &mut ChunkOutputs<'_, 'st>) -> R,
    ) -> R {
        let mut lane = self.sink.lane();
        let mut listing = Listing::default();
        let wrote = write(
            self,
            &mut ChunkOutputs {
                sink: &mut *lane,
                listing: &mut listing,
            },
        );
        self.sink.join(lane.into_written());
        self.listing.listed.extend(listing.listed);
        wrote
    }

    /// One Sample v2 chunk, serialized straight into the sink.
    pub fn prepared_chunk(&mut self, source_id: &str, chunk: &PreparedChunk<'_>) -> Result<()> {
        let key = chunk_key(source_id, chunk.chunk_id());
        let id = self.listing.open(self.sink, &key, "sample_v2".into())?;
        let mut out = ListedObject {
            sink: &mut *self.sink,
            listing: &mut *self.listing,
            id,
        };
        chunk.write_to(&mut out).map_err(|e| from_io(&key, e))?;
        let info = chunk.info();
        self.listing.close(self.sink, id, |listed| ManifestOutput {
            pid: info.pid,
            chunk_id: Some(chunk.chunk_id().to_owned()),
            samples: Some(info.samples as u64),
            start_ns: Some(info.start_ns),
            end_ns: Some(info.end_ns),
            ..listed
        })
    }
}

/// An object open in a listing as a writer.
struct ListedObject<'a, 'st> {
    sink: &'a mut dyn OutputSink<'st>,
    listing: &'a mut Listing,
    id: usize,
}

impl Write for ListedObject<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.listing.write(self.sink, self.id, buf).map_err(to_io)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
