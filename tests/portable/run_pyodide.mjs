// Runs a Python script on cadet_magic's portable core inside Pyodide, under Node, offline.
//
//   node run_pyodide.mjs --dist DIR --wheels DIR --repo DIR --manifest FILE --script FILE
//
// --dist      the prepared copy of the npm pyodide package (indexURL; holds micropip's wheel)
// --wheels    a folder of pure wheels to install with micropip from emfs: paths
// --repo      the repository root
// --manifest  JSON {"files": [paths under cadet_magic/]}: the only files copied into Pyodide
//             (core_files.py computes them: the portable core and what it imports)
// --script    the Python script to run; it must set the global SUMMARY (a JSON string)
//
// Prints one JSON line on stdout: {"summary": <the script's SUMMARY>, "platform", "timings",
// "network": [any URL something tried to fetch], "copied": [files copied]}. Python's own output
// goes to stderr. Any request for a non-local URL is refused and reported: nothing downloads.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--")) throw new Error(`unexpected argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const key of ["dist", "wheels", "repo", "manifest", "script"]) {
    if (!out[key]) throw new Error(`missing --${key}`);
  }
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const timings = {};
  const network = [];
  let t = performance.now();
  function lap(name) {
    const now = performance.now();
    timings[name] = Math.round(now - t) / 1000;
    t = now;
  }

  // Offline guard: Pyodide reads local paths with node:fs; a URL fetch would be a download.
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (resource, init) => {
    const url = String(resource?.url ?? resource);
    if (url.startsWith("file:")) return realFetch(resource, init);
    network.push(url);
    throw new Error(`offline test: refused to fetch ${url}`);
  };

  const dist = path.resolve(args.dist) + path.sep;
  const { loadPyodide } = await import(pathToFileURL(path.join(dist, "pyodide.mjs")).href);
  const pyodide = await loadPyodide({
    indexURL: dist,
    stdout: (line) => process.stderr.write(`[py] ${line}\n`),
    stderr: (line) => process.stderr.write(`[py:err] ${line}\n`),
  });
  lap("load_pyodide");

  await pyodide.loadPackage("micropip", { messageCallback: () => {} });
  lap("load_micropip");

  const wheelDir = "/tmp/wheels";
  pyodide.FS.mkdirTree(wheelDir);
  const wheels = [];
  for (const name of fs.readdirSync(args.wheels).sort()) {
    if (!name.endsWith(".whl")) continue;
    pyodide.FS.writeFile(`${wheelDir}/${name}`, fs.readFileSync(path.join(args.wheels, name)));
    wheels.push(`emfs:${wheelDir}/${name}`);
  }
  const micropip = pyodide.pyimport("micropip");
  await micropip.install(wheels);
  micropip.destroy();
  lap("install_wheels");

  const site = "/home/pyodide/portable";
  const copied = JSON.parse(fs.readFileSync(args.manifest, "utf8")).files;
  for (const rel of copied) {
    const target = `${site}/cadet_magic/${rel}`;
    pyodide.FS.mkdirTree(path.posix.dirname(target));
    pyodide.FS.writeFile(target, fs.readFileSync(path.join(args.repo, "cadet_magic", rel)));
  }
  pyodide.runPython(`import sys; sys.path.insert(0, ${JSON.stringify(site)})`);
  lap("copy_core");

  const platform = pyodide.runPython("import sys; sys.platform");
  const script = fs.readFileSync(args.script, "utf8");
  const globals = pyodide.toPy({ __name__: "__main__", __file__: args.script });
  await pyodide.runPythonAsync(script, { globals });
  const summary = JSON.parse(globals.get("SUMMARY"));
  globals.destroy();
  lap("run_script");

  process.stdout.write(
    JSON.stringify({ summary, platform, timings, network, wheels, copied }) + "\n",
  );
}

// A failure prints its message (a Python traceback for a PythonError), not Pyodide's source.
main().catch((err) => {
  process.stderr.write(`run_pyodide: ${err?.message ?? err}\n`);
  process.exit(1);
});
