//! The `/proc/self/maps` text gperftools appends after the records: which file each address
//! range maps, so that a frame keeps its image (path, range, file offset) and can be named once
//! the image's debug file is known.

use crate::error::Result;
use crate::limits::{exceeded, Limits};
use crate::model::{Image, ImageHandle, Profile};

/// Stat: lines of the text after the records that are not maps lines, skipped (pprof skips
/// them too).
const UNRECOGNIZED: &str = "pprof_legacy_maps_line_unrecognized";

/// The executable mappings, by start address.
#[derive(Debug, Default)]
pub(super) struct Maps {
    ranges: Vec<(u64, u64, ImageHandle)>,
}

impl Maps {
    /// Reads the maps text: one image per executable mapping, as pprof keeps them. Every
    /// line is bounded by `max_line_bytes` and the lines by `max_table_entries`.
    pub fn read(text: &[u8], profile: &mut Profile, limits: &Limits) -> Result<Maps> {
        let mut ranges = Vec::new();
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            if i as u64 >= limits.max_table_entries {
                return Err(exceeded("max_table_entries", limits.max_table_entries));
            }
            if line.len() as u64 > limits.max_line_bytes {
                return Err(exceeded("max_line_bytes", limits.max_line_bytes));
            }
            let line = String::from_utf8_lossy(line);
            if line.trim().is_empty() {
                continue;
            }
            match Mapping::parse(&line) {
                Some(m) if m.executable => {
                    let mut image = Image::new(m.path.map(|p| profile.intern(p)), m.start, m.end);
                    image.file_offset = m.offset;
                    ranges.push((m.start, m.end, profile.add_image(image)));
                }
                Some(_) => {}
                None => profile.count(UNRECOGNIZED),
            }
        }
        ranges.sort_unstable_by_key(|&(start, end, _)| (start, end));
        Ok(Maps { ranges })
    }

    /// The image whose range holds `address`.
    pub fn image(&self, address: u64) -> Option<ImageHandle> {
        let after = self
            .ranges
            .partition_point(|&(start, _, _)| start <= address);
        let &(_, end, image) = self.ranges[..after].last()?;
        (address < end).then_some(image)
    }
}

/// One line of `/proc/<pid>/maps`: `start-end perms offset dev inode [path]`.
#[derive(Debug, PartialEq, Eq)]
struct Mapping<'a> {
    start: u64,
    end: u64,
    executable: bool,
    offset: u64,
    path: Option<&'a str>,
}

impl<'a> Mapping<'a> {
    fn parse(mut line: &'a str) -> Option<Mapping<'a>> {
        let (start, end) = field(&mut line)?.split_once('-')?;
        let (start, end) = (hex(start)?, hex(end)?);
        let perms = field(&mut line)?;
        let offset = hex(field(&mut line)?)?;
        let (major, minor) = field(&mut line)?.split_once(':')?;
        hex(major)?;
        hex(minor)?;
        field(&mut line)?.parse::<u64>().ok()?;
        let path = Some(line.trim()).filter(|p| !p.is_empty());
        let valid = start < end && perms.bytes().all(|b| b"rwxps-".contains(&b));
        valid.then_some(Mapping {
            start,
            end,
            executable: perms.contains('x'),
            offset,
            path,
        })
    }
}

/// The next whitespace-separated field of `rest`, which moves past it.
fn field<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let s = rest.trim_start();
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    *rest = &s[end..];
    Some(&s[..end]).filter(|f| !f.is_empty())
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let line = "5644e1e0e000-5644e1e0f000 r-xp 00001000 00:00 10053571    /tmp/a b/w";
        assert_eq!(
            Mapping::parse(line),
            Some(Mapping {
                start: 0x5644e1e0e000,
                end: 0x5644e1e0f000,
                executable: true,
                offset: 0x1000,
                path: Some("/tmp/a b/w"),
            })
        );
        let anonymous = Mapping::parse("7f2321400000-7f2321499000 rw-p 00000000 00:00 0  ");
        assert_eq!(
            anonymous.map(|m| (m.executable, m.path)),
            Some((false, None))
        );
        for bad in [
            "build=/tmp/w",
            "5644-5643 r-xp 0 00:00 0 /x",
            "5644-5645 r-xq 0 00:00 0 /x",
            "5644-5645 r-xp 0 00:00 /x",
        ] {
            assert_eq!(Mapping::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn addresses_find_their_image() {
        let mut profile = Profile::new("test");
        let text = b"2000-3000 r-xp 0 08:01 7 /b\n1000-2000 r-xp 0 08:01 7 /a\n\
                     3000-4000 rw-p 0 08:01 7 /b\nnot a line\n";
        let maps = Maps::read(text, &mut profile, &Limits::default()).unwrap();
        let path = |a: u64| {
            let image = profile.image(maps.image(a)?);
            Some(profile.str(image.path?).to_owned())
        };
        assert_eq!(path(0x1000).as_deref(), Some("/a"));
        assert_eq!(path(0x2fff).as_deref(), Some("/b"));
        assert_eq!(path(0x3000), None, "not executable");
        assert_eq!(path(0xfff), None);
        assert_eq!(profile.stats.get(UNRECOGNIZED).copied(), Some(1));
        let tight = Limits {
            max_table_entries: 2,
            ..Limits::default()
        };
        assert!(Maps::read(text, &mut profile, &tight).is_err());
    }
}
