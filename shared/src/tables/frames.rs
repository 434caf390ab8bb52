//! The `frames` rows: one per model frame a table profile reaches, inlined calls kept as a list on
//! the frame (unlike Sample v2, which spreads them over extra frames).

use arrow_array::RecordBatch;

use super::columns::{
    addresses, batch, booleans, inlined_lists, int32s, list_item_field, strings, InlinedEntry,
};
use super::schema::Table;
use super::Segment;
use crate::error::Result;
use crate::model::{Frame, FrameAddress, Image, Profile, SymbolStatus};

fn address_value(a: FrameAddress) -> u64 {
    match a {
        FrameAddress::Absolute(a)
        | FrameAddress::ImageRelative(a)
        | FrameAddress::BaseRelative(a) => a,
    }
}

fn address_space(a: FrameAddress) -> &'static str {
    match a {
        FrameAddress::Absolute(_) => "absolute",
        FrameAddress::ImageRelative(_) => "image_relative",
        FrameAddress::BaseRelative(_) => "base_relative",
    }
}

/// The `frames` rows of `segments`, each segment's in id order.
pub(super) fn frames_batch(source_id: &str, segments: &[Segment<'_>]) -> Result<RecordBatch> {
    const T: Table = Table::Frames;
    struct Row<'r> {
        profile_id: &'r str,
        id: u32,
        name: String,
        profile: &'r Profile,
        frame: &'r Frame,
        image: Option<&'r Image>,
    }
    let mut rows = Vec::new();
    for &(profile_id, profile, tree, ref range) in segments {
        for (i, &h) in range.clone().zip(&tree.frames[range.clone()]) {
            let frame = profile.frame(h);
            rows.push(Row {
                profile_id,
                id: u32::try_from(i).expect("frame ids are u32 by construction"),
                name: profile.frame_name(frame),
                profile,
                frame,
                image: frame.image.map(|i| profile.image(i)),
            });
        }
    }
    let text = |f: fn(&Frame) -> Option<crate::model::StringHandle>| {
        strings(T, rows.iter().map(|r| r.profile.opt_str(f(r.frame))))
    };
    let inlined: Vec<Vec<InlinedEntry>> = rows
        .iter()
        .map(|r| {
            r.frame
                .inlined_into
                .iter()
                .map(|call| InlinedEntry {
                    function: r.profile.opt_str(call.function),
                    file: r.profile.opt_str(call.file),
                    line: call.line,
                    column: call.column,
                    system_name: r.profile.opt_str(call.system_name),
                })
                .collect()
        })
        .collect();
    let debug_ids: Vec<Option<String>> = rows
        .iter()
        .map(|r| r.image.and_then(|i| i.debug_id).map(|d| d.to_string()))
        .collect();
    batch(
        T,
        vec![
            strings(T, rows.iter().map(|_| Some(source_id)))?,
            strings(T, rows.iter().map(|r| Some(r.profile_id)))?,
            int32s(rows.iter().map(|r| Some(r.id))),
            strings(T, rows.iter().map(|r| Some(r.name.as_str())))?,
            strings(
                T,
                rows.iter().map(|r| Some(r.profile.kind_name(r.frame.kind))),
            )?,
            text(|f| f.function)?,
            text(|f| f.system_name)?,
            text(|f| f.module)?,
            text(|f| f.file)?,
            int32s(rows.iter().map(|r| r.frame.line)),
            int32s(rows.iter().map(|r| r.frame.column)),
            addresses(rows.iter().map(|r| r.frame.address.map(address_value))),
            strings(T, rows.iter().map(|r| r.frame.address.map(address_space)))?,
            strings(
                T,
                rows.iter()
                    .map(|r| r.image.and_then(|i| r.profile.opt_str(i.path))),
            )?,
            strings(
                T,
                rows.iter()
                    .map(|r| r.image.and_then(|i| i.code_id.as_ref()).map(|c| c.as_str())),
            )?,
            strings(T, debug_ids.iter().map(Option::as_deref))?,
            addresses(rows.iter().map(|r| r.image.map(|i| i.start))),
            // The model keeps 0 for an unknown end.
            addresses(
                rows.iter()
                    .map(|r| r.image.map(|i| i.end).filter(|&e| e != 0)),
            ),
            addresses(rows.iter().map(|r| r.image.map(|i| i.file_offset))),
            inlined_lists(T, &list_item_field(&T.schema(), "inlined_into"), &inlined)?,
            booleans(rows.iter().map(|r| Some(r.frame.function.is_some()))),
            strings(
                T,
                rows.iter()
                    .map(|r| r.frame.symbol_status.map(SymbolStatus::name)),
            )?,
            // In the space of `address`, as `address` is written.
            addresses(rows.iter().map(|r| r.frame.function_start)),
        ],
    )
}
