#!/usr/bin/env bash
# Records tests/fixtures/jfr/*.jfr from tests/fixtures/jfr/src/Workload.java with JDK 17 and
# JDK 25, and the reduced `jfr print --json` output the tests compare the decoder with.
# Usage: scripts/make_jfr_fixtures.sh [JDK17_HOME] [JDK25_HOME]
set -euo pipefail
cd "$(dirname "$0")/../tests/fixtures/jfr"
jdk17=${1:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=${2:-/usr/lib/jvm/temurin-25-jdk-amd64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$jdk17/bin/javac" --release 17 -d "$work" src/Workload.java
# The working directory and the class path are the only paths the JVM could record; run from
# the temporary directory so that neither names this checkout.
cp src/fixtures.jfc "$work/"
record() { # jdk name [args...]
    local jdk=$1 name=$2 extra=$3
    shift 3
    (cd "$work" && "$jdk/bin/java" -Xmx256m -XX:+UseSerialGC -XX:TLABSize=1m -XX:-ResizeTLAB \
        "-XX:StartFlightRecording=filename=$name.jfr,settings=fixtures.jfc$extra" \
        -cp . Workload "$@" >/dev/null)
    cp "$work/$name.jfr" .
}
record "$jdk17" jdk17 ""
record "$jdk17" jdk17-chunks "" rotate
record "$jdk25" jdk25 ",+jdk.CPUTimeSample#enabled=true,+jdk.CPUTimeSample#throttle=10ms"
# The events the tests read, as the JDK's own tool prints them, reduced to the fields the
# tests compare: the event type, start time, thread, stack (class, method, line, frame type)
# and the event's weight fields.
events=jdk.ExecutionSample,jdk.NativeMethodSample,jdk.ObjectAllocationSample,jdk.ObjectAllocationOutsideTLAB,jdk.JavaMonitorEnter,jdk.ThreadPark,jdk.CPUTimeSample
reduce='[.recording.events[] | {type, startTime: .values.startTime,
  thread: ((.values.sampledThread // .values.eventThread) | {javaName, osThreadId}),
  truncated: .values.stackTrace.truncated,
  frames: [.values.stackTrace.frames[]? | [.method.type.name, .method.name, .lineNumber, .type]],
  weight: .values.weight, allocationSize: .values.allocationSize, duration: .values.duration,
  samplingPeriod: .values.samplingPeriod}]'
for name in jdk17 jdk17-chunks; do
    "$jdk17/bin/jfr" print --json --stack-depth 64 --events "$events" "$name.jfr" | jq -c "$reduce" | gzip -9n >"$name.json.gz"
done
"$jdk25/bin/jfr" print --json --stack-depth 64 --events "$events" jdk25.jfr | jq -c "$reduce" | gzip -9n >jdk25.json.gz
"$jdk17/bin/jfr" summary jdk17-chunks.jfr | grep -E '^ *Chunks:'
# Three chunks repeat the metadata three times; gzip keeps the file small.
gzip -9nf jdk17-chunks.jfr
ls -l ./*.jfr ./*.jfr.gz ./*.json.gz
