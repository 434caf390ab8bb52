//! v1.8 and v1.9 payloads, decoded with their own numbering and moved into the v1.10
//! messages the importer reads. Only `Profile` and `Sample` differ. v1.8's
//! `comment_strindices` has no v1.10 field: the number of comments dropped is returned so the
//! caller can count them.

use proflake_proto::otlp::legacy::{v1_8, v1_9};
use proflake_proto::otlp::profiles::{
    Profile, ProfilesData, ResourceProfiles, Sample, ScopeProfiles,
};

fn sample(s: v1_8::Sample) -> Sample {
    Sample {
        stack_index: s.stack_index,
        attribute_indices: s.attribute_indices,
        link_index: s.link_index,
        values: s.values,
        timestamps_unix_nano: s.timestamps_unix_nano,
    }
}

fn sample_9(s: v1_9::Sample) -> Sample {
    Sample {
        stack_index: s.stack_index,
        attribute_indices: s.attribute_indices,
        link_index: s.link_index,
        values: s.values,
        timestamps_unix_nano: s.timestamps_unix_nano,
    }
}

/// The v1.10 form of a v1.8 request, and how many profile comments it had.
pub(super) fn from_v1_8(data: v1_8::ProfilesData) -> (ProfilesData, usize) {
    let mut comments = 0;
    let resource_profiles = data
        .resource_profiles
        .into_iter()
        .map(|rp| ResourceProfiles {
            resource: rp.resource,
            schema_url: rp.schema_url,
            scope_profiles: rp
                .scope_profiles
                .into_iter()
                .map(|sp| ScopeProfiles {
                    scope: sp.scope,
                    schema_url: sp.schema_url,
                    profiles: sp
                        .profiles
                        .into_iter()
                        .map(|p| {
                            comments += p.comment_strindices.len();
                            Profile {
                                sample_type: p.sample_type,
                                samples: p.sample.into_iter().map(sample).collect(),
                                time_unix_nano: p.time_unix_nano,
                                duration_nano: p.duration_nano,
                                period_type: p.period_type,
                                period: p.period,
                                profile_id: p.profile_id,
                                dropped_attributes_count: p.dropped_attributes_count,
                                original_payload_format: p.original_payload_format,
                                original_payload: p.original_payload,
                                attribute_indices: p.attribute_indices,
                            }
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let data = ProfilesData {
        resource_profiles,
        dictionary: data.dictionary,
    };
    (data, comments)
}

/// The v1.10 form of a v1.9 request.
pub(super) fn from_v1_9(data: v1_9::ProfilesData) -> ProfilesData {
    let resource_profiles = data
        .resource_profiles
        .into_iter()
        .map(|rp| ResourceProfiles {
            resource: rp.resource,
            schema_url: rp.schema_url,
            scope_profiles: rp
                .scope_profiles
                .into_iter()
                .map(|sp| ScopeProfiles {
                    scope: sp.scope,
                    schema_url: sp.schema_url,
                    profiles: sp
                        .profiles
                        .into_iter()
                        .map(|p| Profile {
                            sample_type: p.sample_type,
                            samples: p.samples.into_iter().map(sample_9).collect(),
                            time_unix_nano: p.time_unix_nano,
                            duration_nano: p.duration_nano,
                            period_type: p.period_type,
                            period: p.period,
                            profile_id: p.profile_id,
                            dropped_attributes_count: p.dropped_attributes_count,
                            original_payload_format: p.original_payload_format,
                            original_payload: p.original_payload,
                            attribute_indices: p.attribute_indices,
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    ProfilesData {
        resource_profiles,
        dictionary: data.dictionary,
    }
}
