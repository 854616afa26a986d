#!/usr/bin/env python3
"""Prints template.yaml translated by the AWS SAM translator, as JSON.

Usage: sam-translate.py TEMPLATE [PARAMETERS]

PARAMETERS is a JSON list of parameter-value objects; the output is then a
JSON list with one translation per object, in order. Without it, one
translation with every parameter at its default. The infra tests compare
the result with the CDK stack (docs/design.md §13).

A local CodeUri (what `sam build` packages) becomes a placeholder S3 URI,
as `sam package` would make it. The translator substitutes parameter values
in a few places (a function's Role among them), which is why it takes them;
conditions and the other intrinsic functions are left for the caller.
"""
import json
import sys

import boto3

from samtranslator.parser import parser
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import yaml_parse


def translate(source: str, parameters: dict) -> dict:
    template = yaml_parse(source)
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            props = resource.setdefault("Properties", {})
            if isinstance(props.get("CodeUri"), str) and not props["CodeUri"].startswith("s3://"):
                props["CodeUri"] = "s3://sam-build/" + props["CodeUri"]
    return Translator(
        managed_policy_map={},
        sam_parser=parser.Parser(),
        # The translator wants a region; nothing it emits here depends on it.
        boto_session=boto3.session.Session(region_name="us-east-1"),
    ).translate(
        sam_template=template, parameter_values=dict(parameters or {})
    )


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        source = f.read()
    if len(sys.argv) > 2:
        out = [translate(source, p) for p in json.loads(sys.argv[2])]
    else:
        out = translate(source, {})
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
