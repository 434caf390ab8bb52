#!/usr/bin/env python3
"""The Glue tables, the publish function's wiring and the manifest notification of
infra/template.yaml, registered on moto and checked against docs/tables.md.

Run from anywhere with the workspace's venv: `.venv/bin/python tests/e2e/glue_tables.py`.

1. reads infra/template.yaml with cfn-lint's decoder and resolves the intrinsic functions the
   checked resources use (Ref, Fn::Sub, Fn::Join, Fn::Split, Fn::If, Fn::GetAtt of the queues), for
   two sets of parameters: the defaults, and a hyphenated NamePrefix with an OutputPrefix;
2. starts moto_server (.venv/bin/moto_server, or $PROFLAKE_MOTO_SERVER) on 127.0.0.1, on a port
   of its own, creates the Glue database and every Glue table through boto3 for both sets, and
   reads them back with get_table;
3. checks that every table of docs/tables.md is registered twice, as the lake's Delta table
   `<table>` and the landing table `landing_<table>`, with the columns of docs/tables.md in their
   order and Hive types, `dt` as the partition key, the Delta parameters or the partition
   projection, and the locations lake/<table>/ and tables/v2/<table>/ under the output prefix;
4. checks the publish function's event source mapping, queue, schedules and environment, and
   sends objects through the output bucket's notification configuration on moto: a manifest
   reaches the publish queue and nothing else does.

Prints `glue tests: N passed, M failed` last and exits 0 only when every test passed. moto is
stopped on the way out.
"""

from __future__ import annotations

import atexit
import json
import os
import urllib.parse
import re
import socket
import subprocess
import sys
import threading
import time
import unittest
from pathlib import Path

from moto_server import MotoServer

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
TEMPLATE = REPO / "infra" / "template.yaml"
TABLES_MD = REPO / "docs" / "tables.md"
REGION = "us-east-1"
ACCOUNT = "123456789012"

# The two parameter sets the template is resolved with: the defaults, and the names a second
# stage would use (a hyphen in NamePrefix, outputs under a prefix).
DEFAULTS: dict[str, str] = {}
STAGE = {"NamePrefix": "proflake-e2e", "OutputPrefix": "env/e2e/"}


# ------------------------------------------------------------------------------ docs/tables.md

# docs/tables.md's types and their Hive (Glue) spelling.
SIMPLE_TYPES = {
    "VARCHAR": "string",
    "BIGINT": "bigint",
    "DOUBLE": "double",
    "INTEGER": "int",
    "BOOLEAN": "boolean",
    "TIMESTAMPTZ": "timestamp",
}


def hive_type(doc_type: str) -> str:
    """The Hive type of a docs/tables.md type (`BIGINT, null`, `LIST(STRUCT(a VARCHAR, ...))`)."""
    text = re.sub(r",\s*null\s*$", "", doc_type.strip())
    if text in SIMPLE_TYPES:
        return SIMPLE_TYPES[text]
    m = re.fullmatch(r"MAP\((\w+),\s*(\w+)\)", text)
    if m:
        return f"map<{hive_type(m.group(1))},{hive_type(m.group(2))}>"
    m = re.fullmatch(r"LIST\(STRUCT\((.*)\)\)", text)
    if m:
        fields = []
        for field in m.group(1).split(","):
            parts = field.split()
            if len(parts) != 2:
                raise ValueError(f"struct field {field!r} in {doc_type!r}")
            fields.append(f"{parts[0]}:{hive_type(parts[1])}")
        return f"array<struct<{','.join(fields)}>>"
    raise ValueError(f"docs/tables.md type {doc_type!r} has no Hive equivalent here")


def doc_tables() -> dict[str, list[tuple[str, str]]]:
    """Every `## \\`<table>\\`` section of docs/tables.md with its column table: name and Hive type,
    in order."""
    tables: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in TABLES_MD.read_text().splitlines():
        heading = re.match(r"^## `(\w+)`", line)
        if heading:
            current = heading.group(1)
            tables[current] = []
            continue
        if line.startswith("## "):
            current = None
            continue
        if current is None:
            continue
        row = re.match(r"^\|\s*`(\w+)`\s*\|([^|]+)\|", line)
        if row:
            tables[current].append((row.group(1), hive_type(row.group(2))))
    return tables


# ------------------------------------------------------------------------------ the template

NO_VALUE = object()


class Unresolved(Exception):
    pass


def read_template() -> dict:
    from cfnlint.decode import decode

    template, problems = decode(str(TEMPLATE))
    if problems or template is None:
        raise Unresolved(f"{TEMPLATE}: cannot be read: {problems}")
    return template


class Resolved:
    """The template's values for one set of parameters (the others take their defaults)."""

    def __init__(self, template: dict, overrides: dict[str, str]):
        self.template = template
        self.resources = template["Resources"]
        self.params = {}
        for name, param in template.get("Parameters", {}).items():
            value = overrides.get(name, param.get("Default"))
            if value is None:
                raise Unresolved(f"parameter {name} has no default")
            self.params[name] = str(value)
        unknown = set(overrides) - set(self.params)
        if unknown:
            raise Unresolved(f"no such parameters: {sorted(unknown)}")

    def param(self, name: str) -> str:
        return self.params[name]

    def condition(self, name: str) -> bool:
        return bool(self.value(self.template["Conditions"][name]))

    def ref(self, name: str):
        pseudo = {
            "AWS::AccountId": ACCOUNT,
            "AWS::Region": REGION,
            "AWS::Partition": "aws",
            "AWS::NoValue": NO_VALUE,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.params:
            return self.params[name]
        resource = self.resources.get(name)
        if resource is None:
            raise Unresolved(f"Ref {name}: no such parameter or resource")
        kind, props = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::S3::Bucket":
            return self.value(props["BucketName"])
        if kind == "AWS::Glue::Database":
            return self.value(props["DatabaseInput"]["Name"])
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{self.value(props['QueueName'])}"
        if kind == "AWS::Logs::LogGroup":
            return self.value(props["LogGroupName"])
        if kind in ("AWS::Serverless::Function", "AWS::Events::Rule", "AWS::Athena::WorkGroup"):
            return self.value(props.get("FunctionName", props.get("Name")))
        raise Unresolved(f"Ref {name} ({kind}) is not resolved by this test")

    def get_att(self, name: str, attribute: str):
        resource = self.resources.get(name)
        if resource is None:
            raise Unresolved(f"GetAtt {name}.{attribute}: no such resource")
        kind, props = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::SQS::Queue" and attribute == "Arn":
            return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{self.value(props['QueueName'])}"
        if kind == "AWS::SQS::Queue" and attribute == "QueueName":
            return self.value(props["QueueName"])
        if kind == "AWS::S3::Bucket" and attribute == "Arn":
            return f"arn:aws:s3:::{self.ref(name)}"
        if kind == "AWS::Events::Rule" and attribute == "Arn":
            return f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{self.value(props['Name'])}"
        if kind == "AWS::IAM::Role" and attribute == "Arn":
            return f"arn:aws:iam::{ACCOUNT}:role/{name}"
        if kind == "AWS::Logs::LogGroup" and attribute == "Arn":
            return f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{self.ref(name)}:*"
        raise Unresolved(f"GetAtt {name}.{attribute} ({kind}) is not resolved by this test")

    def sub(self, text: str, variables: dict) -> str:
        def one(m: re.Match) -> str:
            inner = m.group(1)
            if inner.startswith("!"):
                return "${" + inner[1:] + "}"
            if inner in variables:
                return str(self.value(variables[inner]))
            if "." in inner and not inner.startswith("AWS::"):
                resource, attribute = inner.split(".", 1)
                return str(self.get_att(resource, attribute))
            value = self.ref(inner)
            if value is NO_VALUE:
                raise Unresolved(f"${{{inner}}} is AWS::NoValue")
            return str(value)

        return re.sub(r"\$\{([^}]+)\}", one, text)

    def value(self, node):
        """`node` with every intrinsic function replaced by its value; AWS::NoValue drops the
        key or list item that holds it."""
        if isinstance(node, list):
            items = [self.value(item) for item in node]
            return [item for item in items if item is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg), = node.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Fn::Sub":
                if isinstance(arg, list):
                    return self.sub(arg[0], arg[1])
                return self.sub(arg, {})
            if key == "Fn::GetAtt":
                resource, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.get_att(resource, attribute)
            if key == "Fn::Join":
                return str(self.value(arg[0])).join(str(v) for v in self.value(arg[1]))
            if key == "Fn::Split":
                return str(self.value(arg[1])).split(str(self.value(arg[0])))
            if key == "Fn::If":
                name, then, otherwise = arg
                return self.value(then if self.condition(name) else otherwise)
            if key == "Fn::Equals":
                a, b = (self.value(v) for v in arg)
                return str(a) == str(b)
            if key == "Fn::Not":
                return not self.value(arg[0])
            if key == "Fn::And":
                return all(self.value(v) for v in arg)
            if key == "Fn::Or":
                return any(self.value(v) for v in arg)
            if key == "Condition":
                return self.condition(arg)
            if key.startswith("Fn::"):
                raise Unresolved(f"{key} is not resolved by this test")
        out = {}
        for key, item in node.items():
            resolved = self.value(item)
            if resolved is not NO_VALUE:
                out[key] = resolved
        return out

    def props(self, name: str) -> dict:
        return self.value(self.resources[name].get("Properties", {}))

    def of_type(self, kind: str) -> list[str]:
        return [n for n, r in self.resources.items() if r["Type"] == kind]


# ------------------------------------------------------------------------------ moto


class Moto(MotoServer):
    """moto_server on 127.0.0.1 (see moto_server.py), with boto3 clients of it."""

    def client(self, service: str):
        import boto3
        from botocore.config import Config

        config = Config(s3={"addressing_style": "path"}) if service == "s3" else None
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            config=config,
        )


MOTO: Moto | None = None
TEMPLATE_DOC: dict = {}
DOCS: dict[str, list[tuple[str, str]]] = {}
# Per parameter set: the resolved template and what get_table returned, by table name.
REGISTERED: dict[str, tuple[Resolved, dict[str, dict]]] = {}


def setUpModule() -> None:
    global MOTO, TEMPLATE_DOC, DOCS
    DOCS = doc_tables()
    TEMPLATE_DOC = read_template()
    MOTO = Moto()
    # unittest skips tearDownModule when setUpModule fails: stop moto at exit whatever happens.
    atexit.register(MOTO.stop)
    glue = MOTO.client("glue")
    for label, overrides in (("defaults", DEFAULTS), ("stage", STAGE)):
        resolved = Resolved(TEMPLATE_DOC, overrides)
        for name in resolved.of_type("AWS::Glue::Database"):
            props = resolved.props(name)
            glue.create_database(CatalogId=props["CatalogId"], DatabaseInput=props["DatabaseInput"])
        tables = {}
        for name in resolved.of_type("AWS::Glue::Table"):
            props = resolved.props(name)
            glue.create_table(
                CatalogId=props["CatalogId"],
                DatabaseName=props["DatabaseName"],
                TableInput=props["TableInput"],
            )
            table = props["TableInput"]["Name"]
            got = glue.get_table(DatabaseName=props["DatabaseName"], Name=table)["Table"]
            tables[table] = got
        REGISTERED[label] = (resolved, tables)


def tearDownModule() -> None:
    if MOTO is not None:
        MOTO.stop()


# ------------------------------------------------------------------------------ tests


def columns(table: dict) -> list[tuple[str, str]]:
    return [(c["Name"], c["Type"]) for c in table["StorageDescriptor"].get("Columns", [])]


class DocsTables(unittest.TestCase):
    def test_docs_tables_are_read(self):
        # The parser must see every table of the contract, each with its columns; a renamed
        # heading or a changed table layout fails here rather than checking nothing.
        self.assertEqual(
            sorted(DOCS),
            ["counters", "frames", "function_rollup", "profiles", "samples", "stacks"],
        )
        for table, cols in DOCS.items():
            self.assertGreaterEqual(len(cols), 6, table)
            self.assertEqual(cols[0][0], "source_id", table)


class GlueTables(unittest.TestCase):
    def test_every_table_is_registered_twice(self):
        for label, (resolved, tables) in REGISTERED.items():
            expected = sorted(list(DOCS) + [f"landing_{t}" for t in DOCS])
            self.assertEqual(sorted(tables), expected, label)
            database = resolved.props(resolved.of_type("AWS::Glue::Database")[0])["DatabaseInput"]["Name"]
            for got in tables.values():
                self.assertEqual(got["DatabaseName"], database)

    def test_database_name_is_athena_safe(self):
        names = {}
        for label, (resolved, _) in REGISTERED.items():
            (db,) = resolved.of_type("AWS::Glue::Database")
            names[label] = resolved.props(db)["DatabaseInput"]["Name"]
            self.assertRegex(names[label], r"^[a-z0-9_]+$")
        self.assertEqual(names, {"defaults": "proflake", "stage": "proflake_e2e"})

    def test_columns_are_the_docs_columns_in_order(self):
        for label, (_, tables) in REGISTERED.items():
            for table, cols in DOCS.items():
                for name in (table, f"landing_{table}"):
                    with self.subTest(parameters=label, table=name):
                        self.assertEqual(columns(tables[name]), cols)
                        self.assertEqual(tables[name]["PartitionKeys"], [{"Name": "dt", "Type": "string"}])

    def test_lake_tables_are_delta_tables(self):
        for label, (resolved, tables) in REGISTERED.items():
            bucket = resolved.ref("OutputBucket")
            prefix = resolved.param("OutputPrefix")
            for table in DOCS:
                with self.subTest(parameters=label, table=table):
                    got = tables[table]
                    location = f"s3://{bucket}/{prefix}lake/{table}/"
                    self.assertEqual(got["TableType"], "EXTERNAL_TABLE")
                    params = got["Parameters"]
                    # Athena and Trino know a Delta table by this property; Athena's own DDL
                    # writes table_type.
                    self.assertEqual(params.get("spark.sql.sources.provider"), "delta")
                    self.assertEqual(params.get("table_type"), "DELTA")
                    self.assertEqual(params.get("EXTERNAL"), "TRUE")
                    self.assertNotIn("projection.enabled", params)
                    sd = got["StorageDescriptor"]
                    self.assertEqual(sd["Location"], location)
                    # Trino's Delta connector reads the table's path from this SerDe parameter.
                    self.assertEqual(sd["SerdeInfo"]["Parameters"].get("path"), location)
                    # Not readable as plain Parquet: a Hive reader would also read the files the
                    # Delta log has removed.
                    self.assertNotIn("parquet", sd.get("InputFormat", "").lower())
                    self.assertNotIn("parquet", sd["SerdeInfo"].get("SerializationLibrary", "").lower())

    def test_landing_tables_project_dt(self):
        for label, (resolved, tables) in REGISTERED.items():
            bucket = resolved.ref("OutputBucket")
            prefix = resolved.param("OutputPrefix")
            start = resolved.param("LandingProjectionStart")
            for table in DOCS:
                with self.subTest(parameters=label, table=table):
                    got = tables[f"landing_{table}"]
                    self.assertEqual(got["TableType"], "EXTERNAL_TABLE")
                    params = got["Parameters"]
                    self.assertEqual(params.get("projection.enabled"), "true")
                    self.assertEqual(params.get("projection.dt.type"), "date")
                    self.assertEqual(params.get("projection.dt.format"), "yyyy-MM-dd")
                    low, high = params.get("projection.dt.range", "").split(",")
                    self.assertEqual(low, start)
                    self.assertRegex(start, r"^\d{4}-\d{2}-\d{2}$")
                    self.assertRegex(high, r"^NOW(\+\d+DAYS?)?$")
                    self.assertEqual(params.get("projection.dt.interval"), "1")
                    self.assertEqual(params.get("projection.dt.interval.unit"), "DAYS")
                    # Files are under dt=YYYY-MM-DD/, Hive's own layout, so no template is needed.
                    self.assertNotIn("storage.location.template", params)
                    self.assertEqual(params.get("classification"), "parquet")
                    sd = got["StorageDescriptor"]
                    self.assertEqual(sd["Location"], f"s3://{bucket}/{prefix}tables/v2/{table}/")
                    self.assertEqual(
                        sd["SerdeInfo"]["SerializationLibrary"],
                        "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                    )
                    self.assertEqual(sd["InputFormat"], "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat")
                    self.assertEqual(sd["OutputFormat"], "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat")

    def test_athena_workgroup(self):
        for label, (resolved, _) in REGISTERED.items():
            with self.subTest(parameters=label):
                (wg,) = resolved.of_type("AWS::Athena::WorkGroup")
                config = resolved.props(wg)["WorkGroupConfiguration"]
                self.assertEqual(config["EngineVersion"]["SelectedEngineVersion"], "Athena engine version 3")
                self.assertIs(config["EnforceWorkGroupConfiguration"], True)
                self.assertEqual(str(config["BytesScannedCutoffPerQuery"]), resolved.param("AthenaBytesScannedCutoff"))
                self.assertEqual(
                    config["ResultConfiguration"]["OutputLocation"],
                    f"s3://{resolved.ref('OutputBucket')}/{resolved.param('OutputPrefix')}athena-results/",
                )


class PublishWiring(unittest.TestCase):
    def setUp(self):
        self.resolved = Resolved(TEMPLATE_DOC, DEFAULTS)
        self.function = self.resolved.props("PublishFunction")

    def test_event_source_mapping(self):
        events = [e for e in self.function["Events"].values() if e["Type"] == "SQS"]
        self.assertEqual(len(events), 1)
        source = events[0]["Properties"]
        self.assertEqual(source["Queue"], self.resolved.get_att("PublishQueue", "Arn"))
        self.assertEqual(str(source["BatchSize"]), "10000")
        self.assertEqual(str(source["MaximumBatchingWindowInSeconds"]), "300")
        self.assertEqual(source["FunctionResponseTypes"], ["ReportBatchItemFailures"])
        self.assertEqual(self.function["ReservedConcurrentExecutions"], 1)
        window_max = int(TEMPLATE_DOC["Parameters"]["PublishBatchingWindow"]["MaxValue"])
        self.assertLessEqual(window_max, 300)
        queue = self.resolved.props("PublishQueue")
        self.assertGreaterEqual(queue["VisibilityTimeout"], 6 * int(self.function["Timeout"]) + window_max)
        self.assertEqual(queue["RedrivePolicy"]["deadLetterTargetArn"], self.resolved.get_att("PublishDLQ", "Arn"))
        self.assertEqual(str(queue["RedrivePolicy"]["maxReceiveCount"]), self.resolved.param("MaxReceiveCount"))

    def test_environment(self):
        env = self.function["Environment"]["Variables"]
        self.assertEqual(env["PROFLAKE_OUTPUT_BUCKET"], self.resolved.ref("OutputBucket"))
        self.assertEqual(env["PROFLAKE_UPLOAD_BUCKET"], self.resolved.ref("UploadBucket"))
        self.assertEqual(str(env["PROFLAKE_LAKE_TARGET_FILE_BYTES"]), "268435456")
        self.assertEqual(str(env["PROFLAKE_LAKE_RETENTION_HOURS"]), "168")
        self.assertEqual(env["PROFLAKE_METRICS_NAMESPACE"], "proflake")
        # Unset without an output prefix; the prefix with one.
        self.assertNotIn("PROFLAKE_OUTPUT_PREFIX", env)
        staged = Resolved(TEMPLATE_DOC, STAGE).props("PublishFunction")["Environment"]["Variables"]
        self.assertEqual(staged["PROFLAKE_OUTPUT_PREFIX"], STAGE["OutputPrefix"])

    def test_schedules(self):
        queue_arn = self.resolved.get_att("PublishQueue", "Arn")
        inputs = {}
        for rule in self.resolved.of_type("AWS::Events::Rule"):
            for target in self.resolved.props(rule)["Targets"]:
                if target["Arn"] == queue_arn:
                    inputs[rule] = json.loads(target["Input"])
        self.assertEqual(
            sorted(i["action"] for i in inputs.values()), ["compact", "publish-sweep"]
        )
        for body in inputs.values():
            self.assertEqual(body["source"], "proflake.schedule")
        # The queue policy lets both rules and the output bucket send.
        policy = self.resolved.props("PublishQueuePolicy")["PolicyDocument"]["Statement"]
        events = [s for s in policy if s["Principal"] == {"Service": "events.amazonaws.com"}]
        allowed = events[0]["Condition"]["ArnEquals"]["aws:SourceArn"]
        self.assertEqual(sorted(allowed), sorted(self.resolved.get_att(r, "Arn") for r in inputs))
        s3 = [s for s in policy if s["Principal"] == {"Service": "s3.amazonaws.com"}]
        self.assertEqual(
            s3[0]["Condition"]["ArnEquals"]["aws:SourceArn"], self.resolved.get_att("OutputBucket", "Arn")
        )

    def test_alarms(self):
        names = {}
        for alarm in self.resolved.of_type("AWS::CloudWatch::Alarm"):
            props = self.resolved.props(alarm)
            names[props["AlarmName"]] = props
        self.assertIn("proflake-publish-dlq-not-empty", names)
        self.assertIn("proflake-publish-invocation-errors", names)
        lag = names["proflake-publish-lag"]
        self.assertIn("PublishLagMs", lag["Metrics"][0]["Expression"])
        self.assertIn("'proflake-publish'", lag["Metrics"][0]["Expression"])
        self.assertEqual(str(lag["Threshold"]), "1800000")

    def test_landing_retention_is_off_by_default(self):
        def rules(resolved):
            return resolved.props("OutputBucket")["LifecycleConfiguration"]["Rules"]

        self.assertNotIn("expire-landing-tables", [r["Id"] for r in rules(self.resolved)])
        on = Resolved(TEMPLATE_DOC, {**STAGE, "LandingRetentionDays": "30"})
        (rule,) = [r for r in rules(on) if r["Id"] == "expire-landing-tables"]
        self.assertEqual(rule["Prefix"], "env/e2e/tables/v2/")
        self.assertEqual(str(rule["ExpirationInDays"]), "30")


def overlaps(a: dict, b: dict) -> bool:
    """Whether two S3 notification filters can match one key (S3 refuses such a pair)."""

    def rule(config, name):
        for r in config.get("Filter", {}).get("S3Key", {}).get("Rules", []):
            if r["Name"].lower() == name:
                return r["Value"]
        return ""

    pa, pb = rule(a, "prefix"), rule(b, "prefix")
    sa, sb = rule(a, "suffix"), rule(b, "suffix")
    return (pa.startswith(pb) or pb.startswith(pa)) and (sa.endswith(sb) or sb.endswith(sa))


class ManifestNotification(unittest.TestCase):
    def test_manifests_reach_the_publish_queue_and_nothing_else(self):
        for label, overrides in (("defaults", DEFAULTS), ("stage", STAGE)):
            with self.subTest(parameters=label):
                self.route(Resolved(TEMPLATE_DOC, overrides))

    def route(self, resolved: Resolved):
        prefix = resolved.param("OutputPrefix")
        configs = resolved.props("OutputBucket")["NotificationConfiguration"]["QueueConfigurations"]
        to_publish = [c for c in configs if c["Queue"] == resolved.get_att("PublishQueue", "Arn")]
        self.assertEqual(len(to_publish), 1)
        self.assertEqual(to_publish[0]["Event"], "s3:ObjectCreated:*")
        rules = {r["Name"]: r["Value"] for r in to_publish[0]["Filter"]["S3Key"]["Rules"]}
        self.assertEqual(rules, {"prefix": f"{prefix}converted/", "suffix": "manifest.json"})
        for i, a in enumerate(configs):
            for b in configs[i + 1 :]:
                self.assertFalse(overlaps(a, b), f"overlapping notification filters: {a} and {b}")

        # The configuration as S3 (moto) applies it, with moto's queues.
        s3, sqs = MOTO.client("s3"), MOTO.client("sqs")
        bucket = resolved.ref("OutputBucket")
        s3.create_bucket(Bucket=bucket)
        urls = {}
        for config in configs:
            name = config["Queue"].rsplit(":", 1)[1]
            urls[config["Queue"]] = sqs.create_queue(QueueName=name)["QueueUrl"]
        s3.put_bucket_notification_configuration(
            Bucket=bucket,
            NotificationConfiguration={
                "QueueConfigurations": [
                    {
                        "QueueArn": sqs.get_queue_attributes(
                            QueueUrl=urls[c["Queue"]], AttributeNames=["QueueArn"]
                        )["Attributes"]["QueueArn"],
                        "Events": [c["Event"]],
                        "Filter": {"Key": {"FilterRules": c["Filter"]["S3Key"]["Rules"]}},
                    }
                    for c in configs
                ]
            },
        )
        manifest = f"{prefix}converted/0123abcd/manifest.json"
        others = [
            f"{prefix}converted/by-key/k1.json",
            f"{prefix}converted/0123abcd/chunk-0.json",
            f"{prefix}tables/v2/samples/dt=2025-11-22/0123abcd.parquet",
            f"{prefix}lake/samples/_delta_log/00000000000000000000.json",
            "converted/elsewhere/manifest.json" if prefix else "other/converted/x/manifest.json",
        ]
        for key in [manifest] + others:
            s3.put_object(Bucket=bucket, Key=key, Body=b"{}")
        got = self.keys(sqs, urls[resolved.get_att("PublishQueue", "Arn")])
        self.assertEqual(got, [manifest])
        for queue, url in urls.items():
            if queue != resolved.get_att("PublishQueue", "Arn"):
                self.assertNotIn(manifest, self.keys(sqs, url))

    @staticmethod
    def keys(sqs, url: str) -> list[str]:
        """The object keys of the S3 notifications waiting on a queue (test events skipped)."""
        keys = []
        while True:
            messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
            if not messages:
                return sorted(keys)
            for message in messages:
                body = json.loads(message["Body"])
                for record in body.get("Records", []):
                    # S3 form-urlencodes the key in a notification.
                    keys.append(urllib.parse.unquote_plus(record["s3"]["object"]["key"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def main() -> int:
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    # A test with failing subtests fails once; a module set-up error (no test ran) counts as one.
    failing = {getattr(t, "test_case", t).id() for t, _ in result.failures + result.errors}
    failing |= {t.id() for t in result.unexpectedSuccesses}
    ran_and_failed = {t for t in failing if not t.startswith("setUpModule") and "(" not in t}
    passed = result.testsRun - len(result.skipped) - len(ran_and_failed)
    if result.skipped:
        # Nothing here may be skipped: a skip would hide a check.
        failing |= {t.id() for t, _ in result.skipped}
    print(f"\nglue tests: {max(passed, 0)} passed, {len(failing)} failed")
    return 0 if result.wasSuccessful() and not result.skipped else 1


if __name__ == "__main__":
    sys.exit(main())
