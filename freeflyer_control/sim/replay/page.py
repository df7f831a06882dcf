"""The replay page: one HTML file that opens from disk, with no server and no network.

It inlines, in this order: MeshCat's viewer bundle (three.js r132 with MeshCat's scene viewer,
orbit controls and mesh loaders; read at write time from the installed ``meshcat`` package, the
``replay`` extra, with its licence notices), the run's data as a JSON block
(:mod:`freeflyer_control.sim.replay.scene`), and this package's player (``player.js``).
"""

from __future__ import annotations

import html
import importlib.util
import json
from pathlib import Path

VIEWER_BUNDLE = "viewer/dist/main.min.js"  # in the meshcat package
VIEWER_LICENCES = "viewer/dist/main.min.js.LICENSE.txt"

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  html, body {{ margin: 0; height: 100%; overflow: hidden; font: 13px/1.35 system-ui, sans-serif; }}
  #viewer {{ position: absolute; inset: 0 0 44px 0; }}
  #top {{ position: absolute; left: 8px; top: 6px; color: #fff; background: rgba(0,0,0,0.55); padding: 4px 8px;
          border-radius: 4px; pointer-events: none; }}
  #title {{ font-weight: 600; font-size: 15px; }}
  #legend {{ position: absolute; left: 8px; bottom: 52px; background: rgba(255,255,255,0.8); padding: 4px 8px;
             border-radius: 4px; }}
  #legend span {{ display: inline-block; width: 18px; height: 4px; margin: 0 5px 2px 0; vertical-align: middle; }}
  #bar {{ position: absolute; left: 0; right: 0; bottom: 0; height: 44px; display: flex; gap: 10px;
          align-items: center; padding: 0 10px; background: #222; color: #eee; }}
  #scrub {{ flex: 1; }}
  #play {{ width: 64px; }}
</style>
</head>
<body>
<div id="viewer"></div>
<div id="top"><div id="title"></div><div id="hud"></div><div id="rate"></div></div>
<div id="legend"></div>
<div id="bar">
  <button id="play">play</button>
  <input id="scrub" type="range" min="0" max="0" step="1" value="0" aria-label="time">
  <label>speed <select id="speed">
    <option value="0.1">0.1x</option><option value="0.25">0.25x</option><option value="0.5">0.5x</option>
    <option value="1" selected>1x</option><option value="2">2x</option><option value="5">5x</option>
    <option value="10">10x</option><option value="30">30x</option>
  </select></label>
</div>
<!-- MeshCat viewer bundle (MIT), with the notices of what it bundles:
{licences}
-->
<script>{bundle}</script>
<script id="replay-data" type="application/json">{data}</script>
<script>{player}</script>
</body>
</html>
"""


def _viewer_file(relative: str) -> Path | None:
    """A file of the installed meshcat package, found without importing it (its Python side
    starts servers we do not need and imports zmq, tornado and IPython)."""
    spec = importlib.util.find_spec("meshcat")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    return path if path.is_file() else None


def viewer_missing() -> str | None:
    """Why no replay can be written here (one line with the fix), or None."""
    if _viewer_file(VIEWER_BUNDLE) is None:
        return ("the replay needs the viewer of the 'meshcat' package, which is not installed: "
                "pip install 'freeflyer_control[replay]'")
    return None


def _inline(text: str) -> str:
    """Text that cannot end the <script> element it is inlined in."""
    return text.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")


def render(scene: dict) -> str:
    """The page's HTML for ``scene`` (:func:`~freeflyer_control.sim.replay.scene.build_scene`)."""
    bundle_path, licences_path = _viewer_file(VIEWER_BUNDLE), _viewer_file(VIEWER_LICENCES)
    if bundle_path is None:
        raise FileNotFoundError(viewer_missing())
    bundle = bundle_path.read_text(encoding="utf-8")
    licences = licences_path.read_text(encoding="utf-8") if licences_path else "see the meshcat package"
    player = (Path(__file__).parent / "player.js").read_text(encoding="utf-8")
    data = json.dumps(scene, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return _TEMPLATE.format(title=html.escape(scene["title"]), licences=licences.replace("--", "- -"),
                            bundle=_inline(bundle), data=data, player=_inline(player))
