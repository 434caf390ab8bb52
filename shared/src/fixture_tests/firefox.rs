//! Firefox Profiler inputs (gecko and processed, samply's included): what the decoder makes of
//! real and project-made profiles, checked against counts this file computes from the JSON
//! itself; detection both ways; and the errors of unsupported or malformed documents.
//! Fixture provenance: tests/fixtures/firefox/SOURCES.md.

use std::collections::{BTreeMap, BTreeSet};

use super::decode;
use super::native::{build, NativeLib, LINKED_AT};
use super::native_profiles::{addresses, table_chains, Addresses, START_S};
use crate::{
    convert_upload, formats::sniff, model::FrameAddress, model::SeriesKind,
    writers::sample_v2::check_sample_v2, ConvertOptions, ErrorKind, InputFormat,
};
use crate::{
    pipeline::RehydrateScope, process_upload, rehydrate, store::LocalDirStore, store::ObjectStore,
    symbols::add_debug_file, Outcome, ProcessOptions, RehydrateOptions,
};
use serde_json::Value;

use super::util::{files_under, fixture, fixture_path, plain, repo_path, samples, stat};

const SAMPLY: &str = "firefox/samply_ls-linux-profile.json";
const GECKO_61: &str = "firefox/speedscope_firefox61-recursion.json";
const GECKO_79: &str = "firefox/speedscope_firefox79-webpack.json";
const PROCESSED_58: &str = "firefox/synthetic_processed-v58.json";
const GECKO_27: &str = "firefox/synthetic_gecko-v27-processes.json";
const FIXTURES: [&str; 5] = [SAMPLY, GECKO_61, GECKO_79, PROCESSED_58, GECKO_27];

// ---- counts read from the JSON -----------------------------------------------------------

/// One sampled thread as the JSON has it.
#[derive(Debug, Default, PartialEq)]
struct ThreadCounts {
    samples: usize,
    /// Σ weight in the series' unit: samples counted (null = 1), tracing ms as ns.
    weight: i64,
    cpu_delta: i64,
    /// ms since the epoch of the earliest sample.
    first_ms: f64,
}

/// The gecko profile of a DevTools recording, or the document itself.
fn profile_of(doc: &Value) -> &Value {
    if doc.get("meta").is_some() {
        doc
    } else {
        &doc["profile"]
    }
}

fn id(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

/// Per (tid, thread name): counts of every thread with samples, sub-processes included.
fn thread_counts(doc: &Value, out: &mut BTreeMap<(Option<i64>, String), ThreadCounts>) {
    let start = doc["meta"]["startTime"].as_f64().unwrap();
    for t in doc["threads"].as_array().unwrap() {
        let s = &t["samples"];
        let (times, weights, cpu, tracing): (Vec<f64>, Vec<Value>, Vec<Value>, bool) =
            if let Some(schema) = s.get("schema") {
                let col = |name: &str, row: &Value| {
                    schema
                        .get(name)
                        .and_then(|i| row.get(i.as_u64().unwrap() as usize).cloned())
                };
                let rows = s["data"].as_array().unwrap();
                (
                    rows.iter()
                        .map(|r| col("time", r).unwrap().as_f64().unwrap())
                        .collect(),
                    rows.iter()
                        .map(|r| col("weight", r).unwrap_or(Value::Null))
                        .collect(),
                    rows.iter()
                        .map(|r| col("threadCPUDelta", r).unwrap_or(Value::Null))
                        .collect(),
                    false,
                )
            } else {
                let n = s["stack"].as_array().unwrap().len();
                let times = match s.get("time") {
                    Some(t) => t
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_f64().unwrap())
                        .collect(),
                    None => {
                        let mut at = 0.0;
                        (s["timeDeltas"].as_array().unwrap().iter())
                            .map(|d| {
                                at += d.as_f64().unwrap();
                                at
                            })
                            .collect()
                    }
                };
                let column = |key: &str| match s.get(key).and_then(Value::as_array) {
                    Some(a) => a.clone(),
                    None => vec![Value::Null; n],
                };
                let tracing = s["weightType"] == "tracing-ms";
                (times, column("weight"), column("threadCPUDelta"), tracing)
            };
        if times.is_empty() {
            continue;
        }
        let weight = weights
            .iter()
            .map(|w| match w.as_f64() {
                Some(ms) if tracing => (ms * 1e6).round() as i64,
                Some(w) => w as i64,
                None => 1,
            })
            .sum();
        let counts = ThreadCounts {
            samples: times.len(),
            weight,
            cpu_delta: cpu.iter().filter_map(Value::as_i64).sum(),
            first_ms: start + times.iter().copied().fold(f64::INFINITY, f64::min),
        };
        let key = (id(&t["tid"]), t["name"].as_str().unwrap().to_owned());
        assert!(
            out.insert(key, counts).is_none(),
            "one thread per tid and name"
        );
    }
    for process in doc
        .get("processes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        thread_counts(process, out);
    }
}

fn expected(bytes: &[u8]) -> BTreeMap<(Option<i64>, String), ThreadCounts> {
    let doc: Value = serde_json::from_slice(bytes).unwrap();
    let mut out = BTreeMap::new();
    thread_counts(profile_of(&doc), &mut out);
    out
}

#[test]
fn every_thread_keeps_its_samples_weights_and_cpu_time() {
    for rel in FIXTURES {
        let bytes = fixture(rel);
        let want = expected(&bytes);
        assert!(!want.is_empty(), "{rel}");
        let decoded = decode(&bytes, None).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(decoded.format, InputFormat::Firefox, "{rel}");
        let mut got: BTreeMap<(Option<i64>, String), ThreadCounts> = BTreeMap::new();
        for s in samples(&decoded.profile) {
            let key = (s.tid, s.thread_name.clone().unwrap());
            let counts = got.entry(key).or_insert(ThreadCounts {
                first_ms: f64::INFINITY,
                ..ThreadCounts::default()
            });
            match s.series.kind {
                SeriesKind::CpuTime => counts.cpu_delta += s.weight,
                _ => {
                    counts.samples += 1;
                    counts.weight += s.weight;
                }
            }
            counts.first_ms = counts.first_ms.min(s.time.unwrap() as f64 / 1e6);
        }
        assert_eq!(got.len(), want.len(), "{rel}: threads");
        for (key, want) in &want {
            let got = &got[key];
            assert_eq!(
                (got.samples, got.weight, got.cpu_delta),
                (want.samples, want.weight, want.cpu_delta),
                "{rel} {key:?}"
            );
            assert!(
                (got.first_ms - want.first_ms).abs() < 0.001,
                "{rel} {key:?}: {} vs {}",
                got.first_ms,
                want.first_ms
            );
        }
    }
}

#[test]
fn the_real_profiles_have_the_counts_their_sources_name() {
    let count = |rel: &str| -> Vec<usize> {
        expected(&fixture(rel))
            .values()
            .map(|c| c.samples)
            .collect()
    };
    assert_eq!(count(SAMPLY), vec![5130], "perf-exec has no samples");
    assert_eq!(count(GECKO_61), vec![15]);
    assert_eq!(count(GECKO_79), vec![483]);
    let decoded = decode(&fixture(SAMPLY), None).unwrap();
    assert_eq!(stat(&decoded.profile, "firefox_thread_without_samples"), 1);
    let rows = samples(&decoded.profile);
    assert_eq!(rows[0].process_name.as_deref(), Some("ls"));
    assert_eq!(rows[0].series.frequency_hz, Some(4000), "interval 0.25 ms");
}

// ---- libraries and addresses -------------------------------------------------------------

/// The `codeId`s (lowercase) of the libraries of every frame a sample's stack holds,
/// following the processed tables from the JSON.
fn sampled_code_ids(doc: &Value) -> BTreeSet<String> {
    let libs = doc["libs"].as_array().unwrap();
    let mut out = BTreeSet::new();
    for t in doc["threads"].as_array().unwrap() {
        let col = |table: &str, key: &str, i: usize| t[table][key][i].clone();
        for stack in t["samples"]["stack"].as_array().unwrap() {
            let mut at = stack.as_u64();
            while let Some(s) = at.map(|s| s as usize) {
                let frame = col("stackTable", "frame", s).as_u64().unwrap() as usize;
                let func = col("frameTable", "func", frame).as_u64().unwrap() as usize;
                let resource = col("funcTable", "resource", func).as_i64().unwrap();
                let lib = (resource >= 0)
                    .then(|| col("resourceTable", "lib", resource as usize).as_u64())
                    .flatten();
                let address = col("frameTable", "address", frame).as_i64().unwrap_or(-1);
                if let (Some(lib), true) = (lib, address >= 0) {
                    if let Some(code) = libs[lib as usize]["codeId"].as_str() {
                        out.insert(code.to_ascii_lowercase());
                    }
                }
                at = col("stackTable", "prefix", s).as_u64();
            }
        }
    }
    out
}

#[test]
fn sampled_libraries_with_a_code_id_are_build_ids_of_sampled_frames() {
    for rel in [SAMPLY, PROCESSED_58] {
        let bytes = fixture(rel);
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let want = sampled_code_ids(&doc);
        assert!(!want.is_empty(), "{rel}");
        let decoded = decode(&bytes, None).unwrap();
        let profile = &decoded.profile;
        let mut got = BTreeSet::new();
        for s in profile.samples().iter() {
            for f in s
                .stack
                .into_iter()
                .flat_map(|leaf| profile.stack_frames(leaf))
            {
                let image = profile.frame(f).image.map(|i| profile.image(i));
                if let Some(id) = image.and_then(|i| i.build_id()) {
                    if i_has_code_id(image.unwrap()) {
                        got.insert(id.as_str().to_owned());
                    }
                }
            }
        }
        assert_eq!(got, want, "{rel}");
    }
}

fn i_has_code_id(image: &crate::model::Image) -> bool {
    image.code_id.is_some()
}

#[test]
fn native_frames_keep_library_relative_addresses_and_no_made_up_names() {
    let bytes = fixture(SAMPLY);
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let ls = &doc["threads"][1];
    let address = ls["frameTable"]["address"][0].as_u64().unwrap();
    let decoded = decode(&bytes, None).unwrap();
    let rows = samples(&decoded.profile);
    let frames: Vec<_> = rows.iter().flat_map(|s| s.frames()).collect();
    assert!(
        frames.iter().all(|f| f.function.is_none()),
        "symbolicated: false"
    );
    assert!(frames
        .iter()
        .all(|f| matches!(f.address, Some(FrameAddress::BaseRelative(_)))));
    assert!(frames
        .iter()
        .any(|f| f.address == Some(FrameAddress::BaseRelative(address))));
    let kernel = frames.iter().filter(|f| f.kind == "kernel").count();
    assert!(kernel > 0 && frames.iter().filter(|f| f.kind == "native").count() > 0);

    // A gecko profile's addresses are absolute, in the library whose range holds them.
    let decoded = decode(&fixture(GECKO_27), None).unwrap();
    let rows = samples(&decoded.profile);
    let leaf = |function: Option<&str>, address: u64| {
        rows.iter()
            .filter_map(|s| s.leaf())
            .find(|f| {
                f.address == Some(FrameAddress::Absolute(address))
                    && f.function.as_deref() == function
            })
            .cloned()
            .unwrap_or_else(|| panic!("{address:#x}"))
    };
    assert_eq!(
        leaf(None, 0x7f00_0000_2000).image_path.as_deref(),
        Some("/opt/firefox/libxul.so")
    );
    let kernel = leaf(None, 0x7f00_0000_31f0);
    assert_eq!(
        (kernel.kind.as_str(), kernel.image_path.as_deref()),
        ("kernel", Some("/usr/lib/libc.so.6"))
    );
}

#[test]
fn javascript_and_label_frames_keep_their_names_and_positions() {
    let decoded = decode(&fixture(PROCESSED_58), None).unwrap();
    let rows = samples(&decoded.profile);
    let handler = rows
        .iter()
        .filter_map(|s| s.leaf())
        .find(|f| f.function.as_deref() == Some("handler"))
        .unwrap();
    assert_eq!(
        (handler.kind.as_str(), handler.file.as_deref(), handler.line),
        ("javascript", Some("https://example.com/app.js"), Some(12))
    );
    let root = rows[0].frames()[0].clone();
    assert_eq!(
        (root.kind.as_str(), root.function.as_deref()),
        ("label", Some("(root)"))
    );
    assert_eq!(rows[0].pid, Some(4242));

    let decoded = decode(&fixture(GECKO_79), None).unwrap();
    let doc: Value = serde_json::from_slice(&fixture(GECKO_79)).unwrap();
    let first = doc["profile"]["threads"][0]["stringTable"][0]
        .as_str()
        .unwrap();
    assert!(first.starts_with("o (file:///"), "{first}");
    let js = decoded
        .profile
        .frames()
        .map(|(_, f)| f)
        .find(|f| decoded.profile.opt_str(f.function) == Some("o"))
        .unwrap();
    assert_eq!((js.line, js.column), (Some(1), Some(87)));
}

// ---- conversion --------------------------------------------------------------------------

#[test]
fn conversion_has_a_wall_clock_and_carries_cpu_time() {
    let bytes = fixture(SAMPLY);
    let want = expected(&bytes);
    let ls = want.values().next().unwrap();
    let converted = convert_upload(
        "uploads/ls.json",
        "etag",
        &bytes,
        &ConvertOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let manifest = &converted.manifest;
    assert_eq!(manifest.source.format, "firefox");
    let series = |name: &str| {
        manifest
            .series
            .iter()
            .find(|s| s.sample_type == name)
            .unwrap()
    };
    let wall = series("samples");
    assert_eq!(
        (wall.kind.as_str(), wall.observations),
        ("wall_time", ls.samples as u64)
    );
    let cpu = series("cpu");
    assert_eq!(
        (cpu.kind.as_str(), cpu.sample_unit.as_str()),
        ("cpu_time", "microseconds")
    );
    let chunks = converted.sample_v2();
    assert!(!chunks.is_empty());
    let mut placed = 0;
    for (_, chunk) in chunks {
        assert_eq!(check_sample_v2(chunk), vec![]);
        placed += frames_in_their_images(chunk);
    }
    assert!(placed > 0, "native frames with a listed image");
}

/// Checks that each native frame of a chunk whose library is listed in `debug_meta` falls in
/// that library, as symbolicator looks it up (the image with the highest `image_addr` at or
/// below the frame's `instruction_addr`); says how many did.
fn frames_in_their_images(chunk: &[u8]) -> usize {
    let chunk: Value = serde_json::from_slice(chunk).unwrap();
    let hex =
        |v: &Value| u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let images: Vec<(u64, String)> = chunk["debug_meta"]["images"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            (
                hex(&i["image_addr"]),
                i["code_file"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut placed = 0;
    for f in chunk["profile"]["frames"].as_array().unwrap() {
        let (Some(_), Some(package)) = (f.get("instruction_addr"), f["package"].as_str()) else {
            continue;
        };
        if !images.iter().any(|(_, file)| file == package) {
            continue;
        }
        let addr = hex(&f["instruction_addr"]);
        let owner = images
            .iter()
            .filter(|(base, _)| *base <= addr)
            .max_by_key(|(base, _)| *base)
            .map(|(_, file)| file.as_str());
        assert_eq!(owner, Some(package), "frame at {addr:#x}");
        placed += 1;
    }
    placed
}

// ---- versions and malformed input --------------------------------------------------------

/// What the error of a document that must be refused says is wrong.
fn malformed(bytes: &[u8]) -> String {
    let err = decode(bytes, Some(InputFormat::Firefox)).expect_err("an error");
    let ErrorKind::Malformed { format, what, .. } = err.kind() else {
        panic!("expected a malformed firefox profile, got {err}");
    };
    assert_eq!(*format, "firefox");
    what.clone()
}

fn edited(rel: &str, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut doc: Value = serde_json::from_slice(&fixture(rel)).unwrap();
    edit(&mut doc);
    serde_json::to_vec(&doc).unwrap()
}

#[test]
fn older_versions_are_refused_by_number_and_newer_ones_read_with_a_finding() {
    let old = edited(PROCESSED_58, |d| {
        d["meta"]["preprocessedProfileVersion"] = 40.into()
    });
    let what = malformed(&old);
    assert_eq!(
        what,
        "Firefox processed profile version 40 is not supported (41 to 58 are)"
    );
    let old = edited(GECKO_27, |d| d["meta"]["version"] = 8.into());
    assert!(malformed(&old).contains("gecko profile version 8 is not supported (9 to 32 are)"));
    let new = edited(PROCESSED_58, |d| {
        d["meta"]["preprocessedProfileVersion"] = 61.into()
    });
    let decoded = decode(&new, None).unwrap();
    assert_eq!(
        decoded.profile.findings.len(),
        1,
        "{:?}",
        decoded.profile.findings
    );
}

#[test]
fn broken_tables_are_malformed_with_their_place() {
    let whole = fixture(PROCESSED_58);
    for cut in [40, whole.len() / 2, whole.len() - 2] {
        let what = malformed(&whole[..cut]);
        assert!(what.contains("EOF"), "cut at {cut}: {what}");
    }
    let bad = edited(PROCESSED_58, |d| {
        d["threads"][0]["samples"]["stack"][1] = 99.into()
    });
    let what = malformed(&bad);
    assert!(
        what.contains("threads[0]") && what.contains("samples.stack[1] = 99"),
        "{what}"
    );
    let bad = edited(PROCESSED_58, |d| {
        d["threads"][0]["stackTable"]["prefix"][1] = 4.into()
    });
    assert!(malformed(&bad).contains("prefix 4 does not come before it"));
    let bad = edited(PROCESSED_58, |d| {
        d["threads"][0]["funcTable"]["name"][1] = 500.into()
    });
    let what = malformed(&bad);
    assert!(what.contains("frameTable row 1: string 500"), "{what}");
    let bad = edited(GECKO_27, |d| {
        d["threads"][0]["frameTable"]["data"][1][0] = 77.into()
    });
    assert!(malformed(&bad).contains("threads[0]: frameTable row 1"));
    let bad = edited(PROCESSED_58, |d| {
        d["threads"][1]["samples"]["weightType"] = "fish".into()
    });
    assert!(malformed(&bad).contains("weightType \"fish\""));
    let what = malformed(br#"{"meta":{"interval":1}}"#);
    assert!(
        what.contains("neither version nor preprocessedProfileVersion"),
        "{what}"
    );
}

#[test]
fn too_deep_stacks_keep_their_samples_without_frames() {
    let depth = 9000;
    let bad = edited(PROCESSED_58, |d| {
        let t = &mut d["threads"][0];
        let prefix: Vec<Value> = (0..depth)
            .map(|i| if i == 0 { Value::Null } else { (i - 1).into() })
            .collect();
        t["stackTable"] =
            serde_json::json!({"length": depth, "prefix": prefix, "frame": vec![1; depth]});
        t["samples"]["stack"] = serde_json::json!([depth - 1, 1, 0, 0, 0, 0, 0]);
    });
    let decoded = decode(&bad, None).unwrap();
    assert_eq!(stat(&decoded.profile, "firefox_stack_too_deep"), 1);
}

// ---- detection ---------------------------------------------------------------------------

fn prefix(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(4096)]
}

#[test]
fn only_the_firefox_sniffer_claims_the_profiles() {
    for rel in FIXTURES {
        let bytes = fixture(rel);
        let claimed = InputFormat::ALL.iter().filter(|f| f.sniffs(prefix(&bytes)));
        assert_eq!(
            claimed.collect::<Vec<_>>(),
            [&InputFormat::Firefox],
            "{rel}"
        );
        assert_eq!(sniff(prefix(&bytes)), Some(InputFormat::Firefox), "{rel}");
    }
}

#[test]
fn the_firefox_sniffer_claims_no_other_input() {
    let mut inputs = Vec::new();
    for root in [fixture_path(""), repo_path("samples")] {
        for entry in std::fs::read_dir(root).unwrap() {
            let dir = entry.unwrap().path();
            if dir.file_name().is_some_and(|n| n != "firefox") {
                files_under(&dir, "", &mut inputs);
            }
        }
    }
    assert!(inputs.len() >= 40, "only {} inputs found", inputs.len());
    for path in inputs {
        let bytes = plain(std::fs::read(&path).unwrap(), &path.display().to_string());
        assert!(
            !InputFormat::Firefox.sniffs(prefix(&bytes)),
            "{} must not sniff as firefox",
            path.display()
        );
    }
}

// ---- symbolization -----------------------------------------------------------------------

/// A processed profile of the gcc-built library, as samply writes one unsymbolicated: every
/// leaf address and one `outer → work` stack, each address relative to the library's base
/// (its first loaded segment), the caller's already moved into its call instruction.
fn profile_of_library(lib: &NativeLib, a: &Addresses) -> Vec<u8> {
    let mut relative: Vec<u64> = a.leaves.iter().map(|va| va - LINKED_AT).collect();
    relative.push(a.ret - 1 - LINKED_AT);
    let n = relative.len();
    let callee = a.leaves.iter().position(|&x| x == a.callee).unwrap();
    // Stacks 0..n-1 are single frames; stack n is the caller, n + 1 the callee under it.
    let mut prefix: Vec<Value> = vec![Value::Null; n + 1];
    prefix.push(n.into());
    let mut frame: Vec<usize> = (0..n).collect();
    frame.extend([n - 1, callee]);
    let stacks: Vec<usize> = (0..n - 1).chain([n + 1]).collect();
    let mut strings: Vec<String> = relative.iter().map(|r| format!("{r:#x}")).collect();
    strings.push("libwork.so".into());
    serde_json::to_vec(&serde_json::json!({
        "meta": {"interval": 1, "startTime": START_S as f64 * 1000.0, "version": 24,
                 "preprocessedProfileVersion": 41, "symbolicated": false,
                 "categories": [{"name": "Other", "color": "grey", "subcategories": ["Other"]}]},
        "libs": [{"name": "libwork.so", "path": "/data/app/libwork.so", "codeId": lib.build_id,
                  "breakpadId": null, "debugName": "libwork.so"}],
        "threads": [{
            "name": "work", "pid": "42", "tid": 42, "processName": "app",
            "samples": {"length": stacks.len(), "stack": stacks,
                        "time": (0..stacks.len()).map(|i| i as f64).collect::<Vec<_>>(),
                        "weight": null, "weightType": "samples"},
            "stackTable": {"length": n + 2, "prefix": prefix, "frame": frame},
            "frameTable": {"length": n, "address": relative, "func": (0..n).collect::<Vec<_>>(),
                           "category": vec![0; n], "inlineDepth": vec![0; n]},
            "funcTable": {"length": n, "name": (0..n).collect::<Vec<_>>(), "isJS": vec![false; n],
                          "resource": vec![0; n]},
            "resourceTable": {"length": 1, "lib": [0], "name": [n]},
            "stringArray": strings
        }]
    }))
    .unwrap()
}

#[test]
fn library_relative_addresses_are_named_as_addr2line_names_them() {
    let lib = build("libwork.so", &[]);
    let a = addresses(&lib);
    let dir = tempfile::tempdir().unwrap();
    let store = LocalDirStore::new(dir.path());
    store
        .put("uploads/work.json", &profile_of_library(&lib, &a))
        .unwrap();
    let outcome = process_upload(
        &store,
        &store,
        "uploads/work.json",
        &ProcessOptions::default(),
    );
    assert!(matches!(outcome, Ok(Outcome::Converted(_))), "{outcome:?}");
    let key = format!("debuginfo/{}/libwork.so", lib.build_id);
    store.put(&key, &lib.bytes()).unwrap();
    add_debug_file(&store, &key, u64::MAX).unwrap();
    let scope = RehydrateScope::BuildId(&lib.build_id);
    let page = rehydrate(&store, &store, scope, None, &RehydrateOptions::default()).unwrap();
    assert_eq!(page.reconverted, 1, "{page:?}");

    let chains = table_chains(&store);
    let mut lookups: Vec<u64> = a.leaves.clone();
    lookups.push(a.ret - 1);
    for (va, want) in lookups.iter().zip(lib.addr2line(&lookups)) {
        let got = &chains[&("base_relative".to_owned(), va - LINKED_AT)];
        assert_eq!(*got, want, "virtual address {va:#x}");
    }
}

#[test]
fn missing_and_negative_cpu_deltas_are_counted_and_add_no_cpu_time() {
    let text = edited(PROCESSED_58, |d| {
        d["threads"][0]["samples"]["threadCPUDelta"][2] = (-5).into();
    });
    let decoded = decode(&text, None).unwrap();
    let profile = &decoded.profile;
    assert_eq!(stat(profile, "firefox_cpu_delta_negative"), 1);
    assert_eq!(
        stat(profile, "firefox_cpu_delta_missing"),
        1,
        "the first is null"
    );
    let cpu: i64 = samples(profile)
        .iter()
        .filter(|s| s.series.kind == SeriesKind::CpuTime)
        .map(|s| s.weight)
        .sum();
    assert_eq!(cpu, 4183 - 1000, "the negative delta replaced 1000");
    let far = edited(PROCESSED_58, |d| {
        d["threads"][0]["samples"]["timeDeltas"][0] = 1e300.into()
    });
    assert!(malformed(&far).contains("samples[0]: time 1e300 ms is out of range"));
}
