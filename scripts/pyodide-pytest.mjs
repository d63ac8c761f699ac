// Runs pytest on Pyodide (CPython compiled to WebAssembly) under node, offline.
//
//   node scripts/pyodide-pytest.mjs CACHE [pytest arguments]
//
// CACHE holds node_modules/pyodide, site/ (pure-Python wheels unpacked) and numpy/ (a
// NumPy wheel for Pyodide's ABI when a registry had one, else the reason it is missing),
// all installed by scripts/test-pyodide.sh. The repository (the working directory) and
// site/ are mounted at their own paths; whyalive is imported from src/ as an editable
// install would, with its entry points (the pytest plugin) read from pyproject.toml.
// pytest runs as a promising call, so asyncio.run() can switch stacks (JSPI); the
// exit code is pytest's.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [cacheArg, ...pytestArgs] = process.argv.slice(2);
const cache = resolve(cacheArg);
const repo = process.cwd();
const site = resolve(cache, "site");
const pyodideModule = resolve(cache, "node_modules/pyodide/pyodide.mjs");
const { loadPyodide, version } = await import(pathToFileURL(pyodideModule).href);

// Python's run-time settings pass through (scripts/test.sh runs every leg with
// PYTHONDEVMODE=1); paths such as PYTHONPATH name the host's files and do not.
const env = { HOME: "/home/pyodide" };
for (const name of ["PYTHONDEVMODE", "PYTHONWARNINGS", "PYTHONHASHSEED"]) {
  if (process.env[name] !== undefined) env[name] = process.env[name];
}
// NumPy, where the install found a wheel for this ABI; else why not, for the skip reasons.
const numpyDir = resolve(cache, "numpy");
const numpyWheel = existsSync(numpyDir)
  ? readdirSync(numpyDir).find((name) => name.startsWith("numpy-") && name.endsWith(".whl"))
  : undefined;
if (!numpyWheel && existsSync(resolve(numpyDir, "reason"))) {
  env.WHYALIVE_NUMPY_MISSING = readFileSync(resolve(numpyDir, "reason"), "utf8").trim();
}
const pyodide = await loadPyodide({ env });
if (numpyWheel) {
  await pyodide.loadPackage(resolve(numpyDir, numpyWheel), { messageCallback: () => {} });
}
for (const path of [repo, site]) {
  pyodide.FS.mkdirTree(path);
  pyodide.mountNodeFS(path, path);
}
pyodide.globals.set("REPO", repo);
pyodide.globals.set("SITE", site);
pyodide.globals.set("PYODIDE_VERSION", version);
const main = pyodide.runPython(`
import os
import sys
import tomllib

sys.path[:0] = [SITE, os.path.join(REPO, "src")]
os.chdir(REPO)

def _install_metadata(dist_dir):
    # What an editable install writes: the name, the version and the entry points.
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as file:
        project = tomllib.load(file)["project"]
    info = os.path.join(dist_dir, f"{project['name']}-{project['version']}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as file:
        file.write(f"Metadata-Version: 2.1\\nName: {project['name']}\\n")
        file.write(f"Version: {project['version']}\\n")
    groups = dict(project.get("entry-points", {}))
    groups["console_scripts"] = project.get("scripts", {})
    with open(os.path.join(info, "entry_points.txt"), "w") as file:
        for group, entries in groups.items():
            file.write(f"[{group}]\\n")
            file.writelines(f"{name} = {target}\\n" for name, target in entries.items())

_install_metadata("/tmp/whyalive-metadata")
sys.path.append("/tmp/whyalive-metadata")
print(f"== core tests on Python {sys.version.split()[0]} (Pyodide {PYODIDE_VERSION}, "
      f"{sys.platform}, pure-Python core, dev mode {'on' if sys.flags.dev_mode else 'off'})",
      flush=True)

def main(args):
    import pytest

    return int(pytest.main(list(args)))

main
`);
const status = await main.callPromising(pyodide.toPy(pytestArgs));
process.exit(status);
