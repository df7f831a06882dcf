#!/usr/bin/env python3
"""Screenshots of rviz2 under Xvfb: one per bundled robot and one per launch file, into docs/images/.

Run by hand in a sourced ROS 2 environment with this package built (colcon), rviz2, Xvfb and
ImageMagick (``import``, ``convert``) installed, from a checkout of this repository:

    source /opt/ros/jazzy/setup.bash && source install/setup.bash   # the workspace with this package
    export ROS_DOMAIN_ID=57                                         # a graph of its own
    python3 tools/rviz_screenshots.py [--out docs/images] [--settle 30] [--only view_spatial_6link ...]

For every case it starts a virtual display (``Xvfb :N``, the size of rviz/freeflyer.rviz's window),
``ros2 launch freeflyer_control <launch file> <arguments> rviz:=true`` on it, waits ``--settle``
seconds (the graph starts, rviz draws; or until the launch's output shows the case's ``ready``
text), runs the case's stimulus (an end-effector target), grabs the screen with ``import -window
root`` after the case's ``wait`` and ends the launch (SIGINT to its process group, as Ctrl-C
does). The images are shrunk to fit 1280x800 and stored as 256-colour PNGs (~100-200 kB). It
prints a table of the images and whether each is drawn: enough coloured pixels in the 3-D view
(the robot's links, the markers), against an empty scene's grey. Nothing here is imported by the
package or the tests. The numba kernels compile on a machine's first run (minutes): run the sim
launches once before, or raise ``--settle``.

Cases: ``view.launch.py`` for every bundled robot (the robot at rest, standing alone), and
``sim.launch.py`` (planar_4link flying station keeping while its arm moves to a target: the
thrusters fire, the attitude error shows; spatial_6link in rotation-floating; dual_arm_planar
holding planar_box; dual_arm_planar capturing it, during the approach), ``hil_sim.launch.py``
and ``testbed.launch.py testbed:=planar_4link`` (with ``testbed_emulator`` as its hardware).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROBOTS = ("planar_4link", "spatial_6link", "dual_arm_planar", "spatial_7dof", "spatial_dual_arm")
# The launch's output (rviz's, the nodes') when rviz has drawn its first frame.
RVIZ_UP = "OpenGl version"


@dataclass(frozen=True)
class Case:
    launch_file: str
    arguments: tuple[str, ...] = ()
    # A process standing in for what the launch file expects from outside (a testbed's
    # hardware), started before the launch and ended after it.
    companion: tuple[str, ...] = ()
    # The moment worth showing: after ``--settle`` s (or, with ``ready``, once the launch's output
    # has that text), ``stimulus`` runs (a command, to completion) and the grab follows ``wait`` s
    # later. A station-keeping base at rest fires no thruster; an ee target sets the arm moving.
    ready: str = ""
    stimulus: tuple[str, ...] = ()
    wait: float = 0.0


# planar_4link's ee_link starts at (1.363, 0, 0), world: a target 35 cm away swings the arm, whose
# reaction turns the base; the grab is while the thrusters fight it back.
EE_TARGET = ("ros2", "topic", "pub", "--once", "-w", "1", "/ee_target/ee_link", "geometry_msgs/msg/PoseStamped",
             "{header: {frame_id: world}, pose: {position: {x: 1.2, y: 0.3, z: 0.0}, orientation: {w: 0.0}}}")

CASES: dict[str, Case] = {
    **{f"view_{robot}": Case("view.launch.py", (f"robot:={robot}",)) for robot in ROBOTS},
    "sim_planar_4link_flying": Case("sim.launch.py", ("robot:=planar_4link", "mode:=flying"),
                                    stimulus=EE_TARGET, wait=2.0),
    "sim_spatial_6link": Case("sim.launch.py", ("robot:=spatial_6link", "mode:=rotation-floating")),
    "sim_dual_arm_planar_object": Case("sim.launch.py", ("robot:=dual_arm_planar", "object:=planar_box")),
    # planar_target tumbles 0.32 m from the left hand; the first grasp closes about 3.6 s
    # (simulated) after the controller starts: grabbed during the approach, with the predicted
    # grasp-frame path drawn (a loaded machine runs the simulation slower than the wall clock).
    "sim_dual_arm_planar_capture": Case("sim.launch.py", ("robot:=dual_arm_planar", "object:=planar_target",
                                                          "object_free:=true", "mode:=flying"),
                                        ready="capture of 'planar_target'", wait=2.5),
    "hil_sim_planar_4link": Case("hil_sim.launch.py"),
    # testbed.launch.py alone has no robot state to show (the lab's hardware publishes it): the
    # testbed emulator plays the hardware, in a process of its own, as a lab's drivers would.
    "testbed_planar_4link": Case("testbed.launch.py", ("testbed:=planar_4link",),
                                 companion=("ros2", "run", "freeflyer_control", "testbed_emulator",
                                            "--ros-args", "-p", "testbed_config:=planar_4link")),
}


def free_display() -> int:
    for n in range(90, 200):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return n
    raise RuntimeError("no free X display number between :90 and :199")


def window_size(config: Path) -> str:
    """The rviz window's size saved in ``config``, "WxH". The virtual screen gets this size: rviz
    opens its window at that size whatever the screen, and on a smaller screen the right and bottom
    of the 3-D view were cut off (with the robot, which the view centres)."""
    import yaml

    geometry = yaml.safe_load(config.read_text())["Window Geometry"]
    return f"{geometry['Width']}x{geometry['Height']}"


def coloured_share(png: Path) -> float:
    """Share of the 3-D view's pixels that are coloured (chroma above 0.1, of 1).

    The 3-D view is the right 60 % of the window (the Displays panel holds the left). Its empty
    scene (grey background, grey grid, the TF axes' few thin lines) has almost no coloured pixels;
    the robot's orange and blue links, the CoM ball, the markers and the object do.
    """
    out = subprocess.run(["convert", str(png), "-gravity", "east", "-crop", "60%x100%+0+0", "+repage",
                          "-colorspace", "HCL", "-channel", "G", "-separate", "-threshold", "10%",
                          "-format", "%[fx:mean]", "info:"], capture_output=True, text=True)
    try:
        return float(out.stdout.strip())
    except ValueError:
        raise RuntimeError(f"ImageMagick convert could not read {png}: {out.stderr.strip()}") from None


def shrink(png: Path, fit: str) -> None:
    """Shrunk to fit in ``fit`` (WxH, never enlarged), 256 colours without dithering (dithering
    speckles rviz's flat greys): under 300 kB, for docs/."""
    subprocess.run(["convert", str(png), "-resize", f"{fit}>", "+dither", "-colors", "256", f"PNG8:{png}"],
                   check=True)


# Measured at rviz/freeflyer.rviz's view: rviz up with nothing but world -> base_link (grid and one TF
# axes) 0.00025; the robot with least colour in view, dual_arm_planar at rest, 0.0054.
DRAWN_SHARE = 0.002


def start_xvfb(display: int, size: str) -> subprocess.Popen:
    """``Xvfb :display``, once it accepts clients (its socket exists)."""
    xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", f"{size}x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socket = Path(f"/tmp/.X11-unix/X{display}")
    deadline = time.monotonic() + 10.0
    while not socket.exists():
        if xvfb.poll() is not None or time.monotonic() > deadline:
            xvfb.kill()
            raise RuntimeError(f"Xvfb :{display} did not start (exit {xvfb.poll()})")
        time.sleep(0.1)
    return xvfb


def stop(process: subprocess.Popen | None, timeout: float = 30.0) -> None:
    """SIGINT to the process group (as Ctrl-C), SIGKILL after ``timeout`` s."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def wait_for_output(log: Path, texts: tuple[str, ...], launch: subprocess.Popen, timeout: float) -> None:
    """Until every one of ``texts`` is in ``log`` (the launch's output); the first numba compile
    on a machine takes minutes, hence the long ``timeout`` (s)."""
    deadline = time.monotonic() + timeout
    while not all(text in log.read_text(errors="replace") for text in texts):
        if launch.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"no {texts!r} in the launch's output within {timeout:g} s; see {log}")
        time.sleep(0.05)


def shoot(name: str, case: Case, out: Path, settle: float, size: str, fit: str) -> Path:
    display = free_display()
    xvfb = start_xvfb(display, size)
    env = {**os.environ, "DISPLAY": f":{display}"}
    log = tempfile.NamedTemporaryFile(prefix=f"rviz-{name}-", suffix=".log", delete=False)
    launch = companion = None
    try:
        if case.companion:
            companion = subprocess.Popen(list(case.companion), env=env, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        launch = subprocess.Popen(["ros2", "launch", "freeflyer_control", case.launch_file, *case.arguments,
                                   "rviz:=true"],
                                  env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        if case.ready:
            wait_for_output(Path(log.name), (RVIZ_UP, case.ready), launch, max(settle, 300.0))
        else:
            time.sleep(settle)
        if launch.poll() is not None:
            raise RuntimeError(f"{name}: the launch ended early (exit {launch.returncode}); see {log.name}")
        if case.stimulus:
            subprocess.run(list(case.stimulus), env=env, stdout=log, stderr=subprocess.STDOUT, check=True, timeout=60)
        time.sleep(case.wait)
        path = out / f"rviz_{name}.png"
        subprocess.run(["import", "-display", f":{display}", "-window", "root", str(path)], check=True, env=env)
        return path
    finally:
        stop(launch)
        stop(companion)
        xvfb.terminate()
        xvfb.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--settle", type=float, default=25.0, help="s between the launch and the screenshot")
    parser.add_argument("--size", default=None,
                        help="screen size of the virtual display, WxH (default: the rviz window's, from rviz/freeflyer.rviz)")
    parser.add_argument("--fit", default="1280x800", help="the image is shrunk to fit in WxH")
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), help="these cases only")
    args = parser.parse_args()
    # A shell's background job starts with SIGINT ignored, and an ignored signal stays ignored
    # across exec: ros2 launch would never see the SIGINT that ends it. A handled one is reset.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    missing = [tool for tool in ("ros2", "rviz2", "Xvfb", "import", "convert") if shutil.which(tool) is None]
    if missing:
        print(f"rviz_screenshots: missing {', '.join(missing)} (source ROS 2 and the workspace; "
              "apt-get install xvfb imagemagick)", file=sys.stderr)
        return 2
    size = args.size or window_size(REPO / "rviz" / "freeflyer.rviz")
    args.out.mkdir(parents=True, exist_ok=True)
    print("| case | launch | image | coloured share of the 3-D view | drawn |\n|---|---|---|---|---|")
    failed = 0
    for name in args.only or CASES:
        case = CASES[name]
        command = f"{case.launch_file} {' '.join(case.arguments)}".strip()
        try:
            path = shoot(name, case, args.out, args.settle, size, args.fit)
            share = coloured_share(path)
            shrink(path, args.fit)
            failed += share < DRAWN_SHARE
            shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
            print(f"| {name} | {command} | {shown} | {share:.4f} | {'yes' if share >= DRAWN_SHARE else 'NO'} |",
                  flush=True)
        except (RuntimeError, subprocess.SubprocessError) as exc:  # a failed or hung command: next case
            failed += 1
            print(f"| {name} | {command} | failed: {exc} | | NO |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
