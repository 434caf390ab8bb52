//! The executable mappings of one process (or of the kernel), by address.

use std::collections::BTreeMap;

use crate::model::ImageHandle;

/// Mappings that do not overlap, by start address. A new mapping over an old range replaces
/// what it overlaps, as the process's address space does.
#[derive(Clone, Default)]
pub(super) struct AddressSpace {
    /// start → (end, image).
    by_start: BTreeMap<u64, (u64, ImageHandle)>,
}

impl AddressSpace {
    pub(super) fn len(&self) -> usize {
        self.by_start.len()
    }

    /// Adds `start..end`, dropping the mappings it overlaps.
    pub(super) fn insert(&mut self, start: u64, end: u64, image: ImageHandle) {
        // Overlapping mappings start before `end` and end after `start`; as none overlap each
        // other, they are the last ones starting before `end`.
        while let Some((&old_start, &(old_end, _))) = self
            .by_start
            .range(..end.max(start.saturating_add(1)))
            .next_back()
        {
            if old_end <= start {
                break;
            }
            self.by_start.remove(&old_start);
        }
        self.by_start.insert(start, (end, image));
    }

    /// Every mapping as (start, end, image), by start.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u64, ImageHandle)> + '_ {
        (self.by_start.iter()).map(|(&start, &(end, image))| (start, end, image))
    }

    /// The image mapped at `address`.
    pub(super) fn find(&self, address: u64) -> Option<ImageHandle> {
        let (_, &(end, image)) = self.by_start.range(..=address).next_back()?;
        (address < end).then_some(image)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_mapping_replaces_what_it_overlaps() {
        let (a, b, c) = (
            ImageHandle::from_index(0),
            ImageHandle::from_index(1),
            ImageHandle::from_index(2),
        );
        let mut space = AddressSpace::default();
        space.insert(0x1000, 0x2000, a);
        space.insert(0x3000, 0x4000, b);
        assert_eq!(space.find(0x1fff), Some(a));
        assert_eq!(space.find(0x2000), None);
        assert_eq!(space.find(0x3000), Some(b));
        space.insert(0x1800, 0x3800, c);
        assert_eq!(space.len(), 1);
        assert_eq!(space.find(0x1000), None);
        assert_eq!(space.find(0x37ff), Some(c));
        assert_eq!(space.find(0x3800), None);
        // An empty mapping still takes its start.
        space.insert(0x5000, 0x5000, a);
        assert_eq!(space.len(), 2);
    }
}
