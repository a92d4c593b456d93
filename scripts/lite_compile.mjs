// Compiles pure wheels to Pyodide's bytecode, under Node, offline (run by scripts/build_lite.py).
//
//   node scripts/lite_compile.mjs --dist DIR --jobs FILE
//
// --dist  the Pyodide folder the site ships (its Python compiles: same version, same magic)
// --jobs  JSON [{"src": wheel, "out": wheel, "drop": [path prefixes to leave out],
//                "source_only": [path prefixes not compiled], "compile": [paths compiled anyway]},
//               {"src": zip, "out": zip, "stdlib": true, "source_only": [...]}, ...]
//
// Each output wheel holds the input's files (minus the dropped prefixes) plus, for every module,
// __pycache__/<name>.<cache tag>.pyc as an unchecked-hash pyc (PEP 552): the kernel imports the
// bytecode without compiling the source or comparing timestamps (unpacking a wheel does not keep
// them), and the source stays beside it for tracebacks and `??`. RECORD lists every file with
// its hash. A module Pyodide's Python cannot compile (Python 2 syntax in test data) keeps its
// source only. Prints one JSON line: {"compiled": n, "seconds": s}.
//
// A "stdlib" job repacks Pyodide's python_stdlib.zip (sources only as shipped, so every standard
// library module the kernel imports would be compiled in the browser on every visit: zipimport
// writes no cache): each module gets <name>.pyc beside <name>.py, where zipimport looks first,
// compiled under the path the zip is mounted at (/lib/pythonXY.zip/...) so tracebacks name it.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const REPACK = `
import base64, hashlib, importlib.util, json, sys, warnings, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc

warnings.simplefilter("ignore", SyntaxWarning)  # third-party test data: not ours to report

def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

def repack(src, out, drop, source_only, always):
    compiled = 0
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        names = set(zin.namelist())
        record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
        rows = []
        for info in zin.infolist():
            name = info.filename
            if name == record_name or any(name.startswith(p) for p in drop):
                continue
            data = zin.read(info)
            zout.writestr(info, data)
            if not name.endswith("/"):
                rows.append(f"{name},{digest(data)},{len(data)}")
            if not name.endswith(".py"):
                continue
            if any(name.startswith(p) for p in source_only) and name not in always:
                continue
            try:
                code = compile(data, name, "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                continue
            pyc_name = importlib.util.cache_from_source(name)
            if pyc_name in names:
                continue
            pyc = bytes(_code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False))
            zout.writestr(zipfile.ZipInfo(pyc_name, date_time=info.date_time), pyc,
                          compress_type=zipfile.ZIP_DEFLATED)
            rows.append(f"{pyc_name},{digest(pyc)},{len(pyc)}")
            compiled += 1
        rows.append(f"{record_name},,")
        zout.writestr(record_name, "\\n".join(rows) + "\\n")
    return compiled

def repack_stdlib(src, out, source_only):
    mount = f"/lib/python{sys.version_info[0]}{sys.version_info[1]}.zip/"
    compiled = 0
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        names = set(zin.namelist())
        for info in zin.infolist():
            name = info.filename
            data = zin.read(info)
            zout.writestr(info, data)
            if not name.endswith(".py") or any(name.startswith(p) for p in source_only):
                continue
            pyc_name = name[:-3] + ".pyc"
            if pyc_name in names:
                continue
            try:
                code = compile(data, mount + name, "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                continue
            pyc = bytes(_code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False))
            zout.writestr(zipfile.ZipInfo(pyc_name, date_time=info.date_time), pyc,
                          compress_type=zipfile.ZIP_DEFLATED)
            compiled += 1
    return compiled
`;

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, "")] = argv[i + 1];
  for (const key of ["dist", "jobs"]) if (!out[key]) throw new Error(`missing --${key}`);
  return out;
}

const args = parseArgs(process.argv.slice(2));
const t0 = performance.now();
const dist = path.resolve(args.dist) + path.sep;
const { loadPyodide } = await import(pathToFileURL(path.join(dist, "pyodide.mjs")).href);
const pyodide = await loadPyodide({
  indexURL: dist,
  stdout: (line) => process.stderr.write(`[py] ${line}\n`),
  stderr: (line) => process.stderr.write(`[py:err] ${line}\n`),
});
pyodide.runPython(REPACK);
const repack = pyodide.globals.get("repack");
const repackStdlib = pyodide.globals.get("repack_stdlib");
let compiled = 0;
for (const job of JSON.parse(fs.readFileSync(args.jobs, "utf8"))) {
  pyodide.FS.writeFile("/tmp/in.whl", fs.readFileSync(job.src));
  if (job.stdlib) {
    const sourceOnly = pyodide.toPy(job.source_only || []);
    compiled += repackStdlib("/tmp/in.whl", "/tmp/out.whl", sourceOnly);
    sourceOnly.destroy();
  } else {
    const lists = [job.drop, job.source_only, job.compile].map((x) => pyodide.toPy(x || []));
    compiled += repack("/tmp/in.whl", "/tmp/out.whl", ...lists);
    lists.forEach((x) => x.destroy());
  }
  fs.mkdirSync(path.dirname(job.out), { recursive: true });
  fs.writeFileSync(job.out, pyodide.FS.readFile("/tmp/out.whl"));
}
console.log(JSON.stringify({ compiled, seconds: (performance.now() - t0) / 1000 }));
