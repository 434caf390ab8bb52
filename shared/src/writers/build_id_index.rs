//! The build-ID index: for every image with frames that symbolization works on (native frames
//! the input left unnamed), one small JSON object under
//! `index/build-id/<build_id>/<source_id>.json`, whether or not a debug file named them. When a
//! debug file for a build ID arrives, rehydration lists that one prefix to find every upload
//! (and every address) it can name, without scanning the tables; `symbolized_with` tells
//! whether an upload already used that very file.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::{BuildId, FrameAddress, Image, ImageHandle, Profile};
use crate::plan::TableProfilePlan;
use crate::store::build_id_index_key;
use crate::symbolize::SymbolizeReport;

/// Version of the index entry layout.
pub const BUILD_ID_INDEX_VERSION: u32 = 1;

/// One image's unsymbolized frames in one upload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildIdIndexEntry {
    /// Layout version ([`BUILD_ID_INDEX_VERSION`]).
    pub index_version: u32,
    /// The key the entry is filed under: the code id, else the debug id.
    pub build_id: BuildId,
    /// Code id (lowercase hex GNU build id for ELF).
    pub code_id: Option<String>,
    /// Debug id, as symbol servers index it.
    pub debug_id: Option<String>,
    /// The upload.
    pub source_key: String,
    /// Its identity.
    pub source_id: String,
    /// Its manifest (present once the conversion is complete).
    pub manifest_key: String,
    /// Distinct frames of this image still without a name.
    pub frames: u64,
    /// Distinct frames of this image a debug file named.
    #[serde(default)]
    pub symbolized: u64,
    /// SHA-256 of the debug file the conversion used for this image; `None` when none was
    /// known. Rehydration skips uploads whose file is the one in use.
    #[serde(default)]
    pub symbolized_with: Option<String>,
    /// Where the image was mapped, with the addresses sampled in each mapping.
    pub mappings: Vec<IndexedMapping>,
}

/// One mapping of an image and the unsymbolized addresses seen in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexedMapping {
    /// Path of the mapped file.
    pub path: Option<String>,
    /// First mapped runtime address.
    pub start: u64,
    /// One past the last mapped address (0 when unknown).
    pub end: u64,
    /// File offset of the mapping.
    pub file_offset: u64,
    /// Load bias.
    pub load_bias: u64,
    /// Runtime addresses, sorted and distinct.
    pub absolute: Vec<u64>,
    /// Image-relative addresses (as the producer computed them), sorted and distinct.
    pub image_relative: Vec<u64>,
}

/// The stacks and frames an upload's table profiles reach, gathered plan by plan (a long
/// recording's windows one after another), for its build-ID index.
#[derive(Debug, Default)]
pub struct Reached {
    /// Per model, told apart by address (the plans of one upload share a model, except
    /// pass-through chunks, one model each): which stack nodes were walked already and which
    /// frames they reach, by handle, so a sample costs one lookup once its stack is seen.
    models: Vec<(usize, Vec<bool>, Vec<bool>)>,
}

impl Reached {
    /// Adds the frames `plan`'s samples reach.
    pub fn reach(&mut self, plan: &TableProfilePlan<'_>) {
        let p = plan.profile;
        let address = std::ptr::from_ref(p) as usize;
        let at = match self.models.iter().position(|(m, _, _)| *m == address) {
            Some(at) => at,
            None => {
                self.models.push((address, Vec::new(), Vec::new()));
                self.models.len() - 1
            }
        };
        let (_, done, frames) = &mut self.models[at];
        // A model only grows: size the marks to what it holds now.
        done.resize(p.stacks().len(), false);
        frames.resize(p.frames().len(), false);
        for sample in &plan.samples {
            let mut node = p.samples().stack(sample as usize);
            while let Some(stack) = node {
                if std::mem::replace(&mut done[stack.index()], true) {
                    break; // its ancestors are in too
                }
                let n = p.stack(stack);
                frames[n.frame.index()] = true;
                node = n.parent;
            }
        }
    }

    /// Marks every stack and frame `profile` holds as reached.
    pub fn reach_all(&mut self, profile: &Profile) {
        let address = std::ptr::from_ref(profile) as usize;
        let stacks = vec![true; profile.stacks().len()];
        let frames = vec![true; profile.frames().len()];
        self.models.retain(|(m, _, _)| *m != address);
        self.models.push((address, stacks, frames));
    }

    /// The index entries, by key, in key order. `models` are the models of every plan
    /// reached (in any order), with the frames as the tables hold them.
    pub fn index(
        self,
        models: &[&Profile],
        source_key: &str,
        source_id: &str,
        manifest_key: &str,
        symbolization: &SymbolizeReport,
    ) -> Vec<(String, BuildIdIndexEntry)> {
        let mut entries: BTreeMap<BuildId, BuildIdIndexEntry> = BTreeMap::new();
        for (profile, frames) in self.reached(models) {
            for (handle, seen) in seen_images(profile, &frames) {
                let image = profile.image(handle);
                let Some(build_id) = image.build_id() else {
                    continue; // nothing to look a debug file up by
                };
                let entry = entries.entry(build_id.clone()).or_insert_with(|| {
                    let symbolized_with = (symbolization.images.iter())
                        .find(|i| i.build_id == build_id)
                        .and_then(|i| i.debug_file_sha256.clone());
                    BuildIdIndexEntry {
                        index_version: BUILD_ID_INDEX_VERSION,
                        build_id,
                        code_id: image.code_id.as_ref().map(|c| c.as_str().to_owned()),
                        debug_id: image.debug_id.map(|d| d.to_string()),
                        source_key: source_key.into(),
                        source_id: source_id.into(),
                        manifest_key: manifest_key.into(),
                        frames: 0,
                        symbolized: 0,
                        symbolized_with,
                        mappings: Vec::new(),
                    }
                });
                entry.frames += seen.frames;
                entry.symbolized += seen.symbolized;
                entry.mappings.push(seen.mapping(profile, image));
            }
        }
        (entries.into_values())
            .map(|mut entry| {
                // Image handles follow decode order; sort so the bytes do not depend on it.
                (entry.mappings).sort_by(|a, b| (a.start, &a.path).cmp(&(b.start, &b.path)));
                (build_id_index_key(&entry.build_id, source_id), entry)
            })
            .collect()
    }

    /// Each model reached among `models`, with the frames reached in it.
    fn reached<'m>(self, models: &[&'m Profile]) -> Vec<(&'m Profile, Vec<bool>)> {
        (self.models.into_iter())
            .filter_map(|(address, _, frames)| {
                let model = models
                    .iter()
                    .find(|m| std::ptr::from_ref(**m) as usize == address)?;
                Some((*model, frames))
            })
            .collect()
    }
}

/// What the reached frames of one image in one model hold.
#[derive(Default)]
struct Seen {
    /// Frames without a name.
    frames: u64,
    /// Frames a debug file named.
    symbolized: u64,
    absolute: BTreeSet<u64>,
    relative: BTreeSet<u64>,
}

impl Seen {
    /// The index's record of `image`, with the addresses seen in it.
    fn mapping(self, profile: &Profile, image: &Image) -> IndexedMapping {
        IndexedMapping {
            path: profile.opt_str(image.path).map(str::to_owned),
            start: image.start,
            end: image.end,
            file_offset: image.file_offset,
            load_bias: image.load_bias,
            absolute: self.absolute.into_iter().collect(),
            image_relative: self.relative.into_iter().collect(),
        }
    }
}

/// The images of the frames of `profile` marked in `reached` that symbolization works on, by
/// handle: frames the input named are the input's, the rest are symbolization's.
fn seen_images(profile: &Profile, reached: &[bool]) -> BTreeMap<ImageHandle, Seen> {
    let mut seen: BTreeMap<ImageHandle, Seen> = BTreeMap::new();
    for (h, frame) in profile.frames() {
        if !reached.get(h.index()).copied().unwrap_or(false) {
            continue;
        }
        let named = frame.function.is_some();
        if named && frame.symbol_status.is_none() {
            continue;
        }
        let (Some(image), Some(address)) = (frame.image, frame.address) else {
            continue;
        };
        let seen = seen.entry(image).or_default();
        if named {
            seen.symbolized += 1;
        } else {
            seen.frames += 1;
        }
        match address {
            FrameAddress::Absolute(a) => seen.absolute.insert(a),
            FrameAddress::ImageRelative(a) | FrameAddress::BaseRelative(a) => {
                seen.relative.insert(a)
            }
        };
    }
    seen
}
