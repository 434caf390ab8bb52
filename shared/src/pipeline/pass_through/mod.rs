//! A Sample v2 chunk an input already held, as an output: stored as received, tabulated from
//! a model of its own, and written again only where symbols named its frames. The job joins
//! the two sides here: the reader reads the chunk into a model, and the writer takes the chunk
//! as one of its outputs, so neither reaches the other.

mod rewrite;
#[cfg(test)]
#[path = "round_trip_tests.rs"]
mod round_trip_tests;

pub(crate) use rewrite::rewrite_chunk;

use crate::formats::sentry::chunk::{import, Imported, PassThrough, FORMAT};
use crate::model::Profile;
#[cfg(test)]
use crate::plan::Timing;
use crate::relay::schema::Chunk;
use crate::writers::sample_v2::SampleV2Chunk;

/// The chunk on its own, for the tables: its model, and the output it is stored as.
///
/// The model holds this chunk alone, so its frames are numbered as
/// [`frame_handles`](crate::formats::sentry::chunk::frame_handles) says: once the model's frames
/// are symbolized (in place, [`Profile::rewrite_frames`], which moves no handle),
/// [`rewrite_chunk`] writes them into the chunk.
pub(crate) fn pass_through(given: PassThrough) -> (Profile, SampleV2Chunk) {
    let mut profile = Profile::new(FORMAT);
    let Imported {
        start_ns,
        end_ns,
        samples,
    } = import(&mut profile, &given.chunk);
    profile.sort_samples_by_time();
    let Chunk {
        chunk_id,
        platform,
        release,
        environment,
        ..
    } = given.chunk;
    let output = SampleV2Chunk {
        pid: None,
        chunk_id,
        start_ns,
        end_ns,
        samples,
        #[cfg(test)]
        timing: Timing::Recorded,
        platform,
        release,
        environment,
        json: given.json,
    };
    (profile, output)
}
