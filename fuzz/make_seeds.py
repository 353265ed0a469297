#!/usr/bin/env python3
"""Writes the hand-made seeds of the fuzz corpus (fuzz/corpus/<target>/) from the repository's
own material: the conformance vectors in ../shared/conformance (encodings, one entry per JSON
file), the encodings written in the README and the crates' docs, and the README's command lines.

Run from anywhere: python3 fuzz/make_seeds.py. The corpus is committed; `fuzz/run.sh merge
TARGET` adds what a run found that covers new code. Seed names are content hashes (as libFuzzer's
own), so running this again only adds what changed."""

import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONF = os.path.join(ROOT, "..", "shared", "conformance")
MAX_JSON_SEED = 16 * 1024  # entries larger than this are left out (libFuzzer's -max_len)


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def component(major, minor):
    return f"R{minor}" if major == 0 else f"X{major - 1}.{minor}"


def text_form(enc):
    """tilekit_tile::encoding_text::print_encoding in Python."""
    ints = lambda v: "[" + ",".join(str(x) for x in v) + "]"
    comps = lambda ma, mi: "[" + ",".join(component(a, b) for a, b in zip(ma, mi)) + "]"
    out = ""
    if enc["rs_lengths"]:
        out += "R" + ints(enc["rs_lengths"]) + " "
    out += "H[" + ",".join(ints(h) for h in enc["hs_lengthss"]) + "] "
    out += "P[" + ",".join(comps(a, b) for a, b in zip(enc["ps_to_rhss_major"], enc["ps_to_rhss_minor"])) + "] "
    out += "Y" + comps(enc["ys_to_rhs_major"], enc["ys_to_rhs_minor"])
    return out


def load(name):
    with open(os.path.join(CONF, name)) as f:
        return json.load(f)


def encodings_of_conformance():
    d = load("distributions.json")
    for e in d["distributions"]:
        yield e["encoding"]
    for e in d["meta"].get("compile_failures", []):
        if "encoding" in e:
            yield e["encoding"]
    for name, key in [("load_store_traits.json", "traits"), ("window_walks.json", "walks")]:
        for e in load(name)[key]:
            dist = e.get("distribution")
            if isinstance(dist, dict) and "encoding" in dist:
                yield dist["encoding"]


def encodings_in_docs():
    pattern = re.compile(r"(?:R\[[^\]]*\] *)?H\[\[[^'`\n]*?Y\[[^\]\n]*\]")
    files = [os.path.join(ROOT, "README.md"), os.path.join(CONF, "README.md")]
    for base in ["crates", "examples", "docs"]:
        for dirpath, _, names in os.walk(os.path.join(ROOT, base)):
            files += [os.path.join(dirpath, n) for n in names if n.endswith((".rs", ".md"))]
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for m in pattern.finditer(f.read()):
                yield m.group(0).replace("\\n", "\n")


def trimmed(v, keep=2):
    """The value with every list of objects or lists cut to its first `keep` items: small seeds
    that still reach every part of a checker (whose comparisons then fail, which is fine)."""
    if isinstance(v, dict):
        return {k: trimmed(x, keep) for k, x in v.items()}
    if isinstance(v, list):
        if len(v) > keep and all(isinstance(x, (dict, list)) for x in v):
            v = v[:keep]
        return [trimmed(x, keep) for x in v]
    return v


def json_entries():
    lists = {
        "descriptors.json": "descriptors",
        "distributions.json": "distributions",
        "load_store_traits.json": "traits",
        "sfc.json": "configs",
        "window_walks.json": "walks",
    }
    for name, key in lists.items():
        d = load(name)
        meta = {"category": d["meta"]["category"]}
        if "compile_failures" in d["meta"]:
            meta["compile_failures"] = d["meta"]["compile_failures"]
        for e in d[key]:
            text = json.dumps({"meta": meta, key: [e]}, separators=(",", ":"))
            if len(text) <= MAX_JSON_SEED:
                yield text
            yield json.dumps({"meta": {"category": meta["category"]}, key: [trimmed(e)]},
                             separators=(",", ":"))
    for enc in encodings_of_conformance():
        yield json.dumps(enc, separators=(",", ":"))
        yield json.dumps({"encoding": enc}, separators=(",", ":"))


CLI_LINES = [
    ["show", "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]", "--dtype", "fp32"],
    ["show", "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]", "--json"],
    ["show", "H[[2,2],[4,4]] P[[X0.0],[X0.0]] Y[X0.1,X1.1]"],
    ["show", "H[[2,2],[4,4]] P[[X0.0],[X0.0]] Y[X0.1,X1.1]", "--json"],
    ["show", "R[4] H[[8],[4,4]] P[[R0],[X0.0,X1.0]] Y[X1.1]", "--dtype", "bf16"],
    ["show", '{"rs_lengths":[],"hs_lengthss":[[2],[2]],"ps_to_rhss_major":[[1]],"ps_to_rhss_minor":[[0]],"ys_to_rhs_major":[2],"ys_to_rhs_minor":[0]}'],
    ["sfc", "--lengths", "4,8", "--vector", "1,4", "--snake"],
    ["sfc", "--lengths", "4,8", "--json"],
    ["sfc", "--lengths", "8,8", "--order", "1,0", "--stats"],
    ["sfc", "--lengths", "3,5,7", "--order", "2,0,1", "--vector", "1,2,4", "--stats", "--json"],
    ["morton", "--bits", "2"],
    ["morton", "--bits", "32", "--encode", "3,5", "--decode", "27"],
    ["morton", "--bits", "3", "--json"],
    ["banks", "--layout", "row-major", "--tile", "64x64", "--dtype", "fp16", "--access", "col-vec8"],
    ["banks", "--layout", "swizzle128", "--dtype", "fp16", "--encoding", "H[[4,16],[8,8]] P[[X1.0,X0.1]] Y[X0.0,X1.1]"],
    ["banks", "--layout", "padded:1", "--tile", "32x32", "--access", "col", "--json"],
    ["banks", "--layout", "morton", "--tile", "16x16", "--access", "row-vec4", "--request", "3"],
    ["banks", "--layout", "xor-lds", "--tile", "32x32", "--dtype", "fp16", "--access", "row"],
    ["run", "copy", "--shape", "10x13"],
    ["run", "transpose", "--shape", "10x7", "--dtype", "f16"],
    ["run", "softmax", "--shape", "4x100", "--dtype", "bf16"],
    ["run", "gemm", "--shape", "16x16x16"],
    ["run", "row_sum", "--shape", "3x50", "--seed", "7"],
    ["ptx", "copy", "--shape", "100x130"],
    ["ptx", "softmax", "--shape", "16x100", "--dtype", "bf16", "--target", "sm_80"],
    ["ptx", "transpose", "--shape", "64x64", "--ir"],
    ["ptx", "gemm", "--shape", "64x64x64"],
    ["show", "--help"],
]


def main():
    if not os.path.isdir(CONF):
        sys.exit(f"conformance vectors not found at {CONF}")
    texts = {text_form(e) for e in encodings_of_conformance()} | set(encodings_in_docs())
    for t in sorted(texts):
        write("encoding_text", t)
    for t in json_entries():
        write("json_loaders", t)
    for line in CLI_LINES:
        write("cli_args", "\n".join(line))
    for t in sorted(texts):
        if "\n" not in t:
            write("cli_args", "\n".join(["show", t]))
    # layout_construction takes structured input (arbitrary::Unstructured): a few byte patterns
    for i, b in enumerate([b"\0" * 64, b"\x01" * 64, bytes(range(64)), b"\x07\x02\x03\x04" * 16]):
        write("layout_construction", b)


if __name__ == "__main__":
    main()
