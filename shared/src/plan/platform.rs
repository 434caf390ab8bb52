//! The Sentry platform of a set of frames, shared by the chunks and the tables.

use crate::model::FrameKind;

/// The language runtimes some frames come from.
#[derive(Clone, Copy, Debug, Default)]
pub struct Runtimes {
    jvm: bool,
    python: bool,
    javascript: bool,
}

impl Runtimes {
    /// Notes one frame's runtime.
    pub fn saw(&mut self, kind: FrameKind) {
        self.jvm |= kind == FrameKind::Jvm;
        self.python |= kind == FrameKind::Python;
        self.javascript |= kind == FrameKind::JavaScript;
    }

    /// The given platform, else `android` with ART frames, `python` or `node` with those
    /// runtimes' frames, else `native`.
    pub fn platform(&self, given: Option<&str>) -> String {
        if let Some(p) = given {
            return p.to_owned();
        }
        let platform = if self.jvm {
            "android"
        } else if self.python {
            "python"
        } else if self.javascript {
            "node"
        } else {
            "native"
        };
        platform.to_owned()
    }
}
