//! What the receiver gives back: a request it will take, and what storing it did.

use super::direct::DirectUpload;
use super::reply::Protocol;
use super::{Partial, Response, Upload};

/// A request the receiver has read and will take: the uploads it makes.
#[derive(Debug)]
pub struct Accepted {
    pub(super) protocol: Protocol,
    pub(super) uploads: Vec<Upload>,
    /// What a partial success tells the client: profiles refused and why, or a warning.
    pub(super) partial: Option<Partial>,
    /// Where the client is to upload a file itself (`/v1/uploads`).
    pub(super) direct: Option<DirectUpload>,
}

/// What storing a request did.
#[derive(Debug)]
pub struct Stored {
    /// The answer for the client.
    pub response: Response,
    /// The uploads written (a retry's too, rewritten with the same bytes).
    pub keys: Vec<String>,
}
