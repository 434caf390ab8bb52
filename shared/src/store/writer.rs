//! Objects written piece by piece: a conversion streams each output into the store as it is
//! serialized, so no output is ever held whole in memory.

use std::io::{self, Write};

use super::ObjectStore;
pub use crate::error::from_io;
pub(crate) use crate::error::to_io;
use crate::error::Result;

/// An object being written. Bytes go in through [`Write`]; the object appears at its key,
/// whole, when [`finish`](ObjectWriter::finish) succeeds. Dropped unfinished, or after a failed
/// write, nothing appears and nothing the writer started is left behind.
pub trait ObjectWriter: Write + Send {
    /// Makes the object visible at its key.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// The default writer: collects the bytes and `put`s them at `finish`, for stores that cannot
/// stream.
pub(crate) struct BufferedPut<'s, S: ?Sized> {
    store: &'s S,
    key: String,
    bytes: Vec<u8>,
}

impl<'s, S: ObjectStore + ?Sized> BufferedPut<'s, S> {
    pub(crate) fn new(store: &'s S, key: &str) -> Self {
        BufferedPut {
            store,
            key: key.to_owned(),
            bytes: Vec::new(),
        }
    }
}

impl<S: ?Sized> Write for BufferedPut<'_, S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<S: ObjectStore + ?Sized> ObjectWriter for BufferedPut<'_, S> {
    fn finish(self: Box<Self>) -> Result<()> {
        self.store.put(&self.key, &self.bytes)
    }
}
