"""The replay technology, measured: file size and load time of a 3-minute run, per candidate.

Flies (or reuses, ``--run DIR``) planar_4link's Wilde maneuver (181 s at 50 Hz log) and writes its
replay three ways, from the same records and the same link placements (sim.replay.scene):

* ``meshcat bundle + own player`` -- what ``freeflyer sim`` writes (sim.replay): MeshCat's
  three.js viewer bundle inlined, the run as float32 arrays, our player (robot, trails, CoM,
  targets, thrusters, object, HUD, play / pause / scrub / speed, ``#t=`` in the URL);
* ``meshcat animation`` -- MeshCat's own path: ``set_object`` commands and one ``set_animation``
  (meshcat.animation keyframes of every link), packed as its ``static_html()`` packs them
  (umsgpack, base64 data URLs fetched into ``handle_command_bytearray``); robot only;
* ``viser recording`` -- viser's scene serializer: the same shapes, one pose update per link and
  frame with ``insert_sleep``, ``as_html()`` (its client build inlined); robot only (viser starts
  its websocket server on a free local port to record).

For each: the file's size, and the median over ``--repeats`` loads in headless Chromium
(SwiftShader, test/browser_support.py) of the time from navigation to the robot's orange links
on screen (screenshots every 50 ms; an orange pixel: R > 200, 90 < G < 170, B < 80). Candidates
whose package is missing are reported as such. Needs chromium (apt-get install chromium).

    python bench/bench_replay.py [--run DIR] [--repeats 5]
"""

from __future__ import annotations

import argparse
import base64
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "test"))

import numpy as np  # noqa: E402

from browser_support import Browser, chromium  # noqa: E402


def fly(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "freeflyer_control.cli.main", "sim", "--robot", "planar_4link",
                    "--maneuver", "wilde", "--engine", "python", "--no-plots", "--no-replay", "--overwrite",
                    "--out", str(out)], check=True, cwd=REPO)
    return out


def scene_parts(run_dir: Path):
    from freeflyer_control.sim.replay.scene import build_scene, unpack
    from freeflyer_control.sim.run_record import read_run

    scene = build_scene(read_run(run_dir))
    n, nl = scene["frames"]["count"], len(scene["links"])
    poses = unpack(scene["link_poses"]).reshape(n, nl, 7).astype(float)
    return scene, poses, scene["frames"]["fps"]


def own_player(run_dir: Path, out: Path) -> Path:
    from freeflyer_control.sim.replay import write_replay

    return write_replay(run_dir, out)


def meshcat_animation(run_dir: Path, out: Path) -> Path:
    import umsgpack
    from meshcat import geometry as g
    from meshcat.animation import Animation, AnimationFrameVisualizer
    from meshcat.commands import SetAnimation, SetObject, SetTransform
    from meshcat.path import Path as MPath

    from freeflyer_control.sim.replay.page import VIEWER_BUNDLE, _viewer_file

    scene, poses, fps = scene_parts(run_dir)
    commands = []
    for k, v in enumerate(scene["visuals"]):
        color = int(v["rgba"][0] * 255) << 16 | int(v["rgba"][1] * 255) << 8 | int(v["rgba"][2] * 255)
        shape = {"box": lambda: g.Box(v["size"]), "sphere": lambda: g.Sphere(v["radius"]),
                 "cylinder": lambda: g.Cylinder(v["length"], v["radius"])}[v["shape"]]()
        path = MPath(("meshcat", "robot", scene["links"][v["link"]], f"visual_{k}"))
        commands.append(SetObject(shape, g.MeshPhongMaterial(color=color), path).lower())
        commands.append(SetTransform(np.array(v["matrix"]).reshape(4, 4).T, path).lower())
    anim = Animation(default_framerate=fps)
    for f in range(poses.shape[0]):
        for j, link in enumerate(scene["links"]):
            T = np.eye(4)
            x, y, z, w = poses[f, j, 3:]
            import pinocchio as pin

            T[:3, :3] = pin.Quaternion(w, x, y, z).matrix()
            T[:3, 3] = poses[f, j, :3]
            AnimationFrameVisualizer(anim, MPath(("meshcat", "robot", link)), f).set_transform(T)
    commands.append(SetAnimation(anim).lower())
    fetches = "".join(
        'fetch("data:application/octet-binary;base64,{}").then(r => r.arrayBuffer())'
        '.then(b => viewer.handle_command_bytearray(new Uint8Array(b)));\n'.format(
            base64.b64encode(umsgpack.packb(c)).decode()) for c in commands)
    bundle = _viewer_file(VIEWER_BUNDLE).read_text()
    out.write_text(f"""<!DOCTYPE html><html><head><meta charset=utf-8><title>MeshCat</title></head><body>
<div id="meshcat-pane"></div><script>{bundle}</script>
<script>var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
{fetches}</script><style>body {{margin: 0;}} #meshcat-pane {{width: 100vw; height: 100vh; overflow: hidden;}}</style>
</body></html>""")
    return out


def viser_recording(run_dir: Path, out: Path) -> Path:
    import viser

    scene, poses, fps = scene_parts(run_dir)
    server = viser.ViserServer(host="127.0.0.1", port=0, verbose=False) if "verbose" in \
        viser.ViserServer.__init__.__code__.co_varnames else viser.ViserServer(host="127.0.0.1", port=0)
    try:
        frames = {link: server.scene.add_frame(f"/robot/{link}", show_axes=False) for link in scene["links"]}
        for k, v in enumerate(scene["visuals"]):
            M = np.array(v["matrix"]).reshape(4, 4).T
            import pinocchio as pin

            quat = pin.Quaternion(M[:3, :3]).coeffs()  # x, y, z, w
            kwargs = {"wxyz": (quat[3], quat[0], quat[1], quat[2]), "position": tuple(M[:3, 3]),
                      "color": tuple(int(c * 255) for c in v["rgba"][:3])}
            name = f"/robot/{scene['links'][v['link']]}/visual_{k}"
            if v["shape"] == "box":
                server.scene.add_box(name, dimensions=tuple(v["size"]), **kwargs)
            elif v["shape"] == "sphere":
                server.scene.add_icosphere(name, radius=v["radius"], **kwargs)
            else:  # our placement turns three.js' y axis onto the URDF's z; viser's cylinders lie along z
                M2 = M @ np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]], dtype=float)
                q2 = pin.Quaternion(M2[:3, :3]).coeffs()
                kwargs["wxyz"] = (q2[3], q2[0], q2[1], q2[2])
                server.scene.add_cylinder(name, radius=v["radius"], height=v["length"], **kwargs)
        serializer = server.get_scene_serializer()
        for f in range(poses.shape[0]):
            for j, link in enumerate(scene["links"]):
                x, y, z, w = poses[f, j, 3:]
                frames[link].position = tuple(poses[f, j, :3])
                frames[link].wxyz = (w, x, y, z)
            serializer.insert_sleep(1.0 / fps)
        out.write_text(serializer.as_html())
    finally:
        server.stop()
    return out


CANDIDATES = (("meshcat bundle + own player", "meshcat", own_player),
              ("meshcat animation", "umsgpack", meshcat_animation),
              ("viser recording", "viser", viser_recording))


def orange_pixels(png: bytes) -> int:
    from PIL import Image

    a = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return int(((a[..., 0] > 200) & (a[..., 1] > 90) & (a[..., 1] < 170) & (a[..., 2] < 80)).sum())


def load_time(path: Path, timeout: float = 120.0) -> float:
    """s from navigation to the robot's orange links on screen (at least 200 pixels of them)."""
    with Browser(960, 640, timeout=timeout) as browser:
        t0 = time.perf_counter()
        browser.call("Page.navigate", session=True, url=path.resolve().as_uri())
        while time.perf_counter() - t0 < timeout:
            try:
                shot = browser.screenshot()
            except RuntimeError:  # between documents while navigating
                shot = None
            if shot is not None and orange_pixels(shot) > 200:
                return time.perf_counter() - t0
            time.sleep(0.05)
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path, help="a planar_4link wilde run folder (default: fly one)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if chromium() is None:
        sys.exit("bench_replay: needs chromium (apt-get install chromium)")
    work = Path(tempfile.mkdtemp(prefix="bench-replay-"))
    run_dir = args.run or fly(work / "run")
    print(f"run: {run_dir} (planar_4link, wilde, {scene_parts(run_dir)[0]['frames']})\n")
    print("| candidate | file size | write time | load to robot on screen (median, min-max) |")
    print("|---|---|---|---|")
    import importlib.util

    for name, module, write in CANDIDATES:
        if importlib.util.find_spec(module) is None:
            print(f"| {name} | not measured: `{module}` is not installed | | |")
            continue
        t0 = time.perf_counter()
        path = write(run_dir, work / f"{module}.html")
        written = time.perf_counter() - t0
        times = [load_time(path) for _ in range(args.repeats)]
        print(f"| {name} | {path.stat().st_size / 1e6:.2f} MB | {written:.1f} s | {statistics.median(times):.2f} s "
              f"({min(times):.2f}-{max(times):.2f}) |", flush=True)


if __name__ == "__main__":
    main()
