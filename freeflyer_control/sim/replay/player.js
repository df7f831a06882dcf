// freeflyer_control replay player. Runs on the three.js and the scene viewer that MeshCat's
// bundle (inlined above this script) exports as MeshCat.THREE and MeshCat.Viewer; reads the run
// from the JSON block #replay-data (freeflyer_control/sim/replay/scene.py writes it).
// URL fragment: #t=SECONDS shows that time, paused; #t=SECONDS&play plays from there.
(async function () {
  "use strict";
  const THREE = MeshCat.THREE;
  const D = JSON.parse(document.getElementById("replay-data").textContent);

  function bytesOf(b64) {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes;
  }
  // Arrays come as base64 of zlib-deflated little-endian float32 (scene.py's pack).
  async function inflate(b64) {
    if (b64 === null || b64 === undefined) return null;
    const stream = new Blob([bytesOf(b64)]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Float32Array(await new Response(stream).arrayBuffer());
  }
  const [T, poses, com, eePos, eeTarget, thrForces, objPoses, captured] = await Promise.all([
    D.t, D.link_poses, D.com, D.ee_positions, D.ee_targets, D.thrusters ? D.thrusters.forces : null,
    D.object ? D.object.poses : null, D.object ? D.object.captured : null].map(inflate));

  const F = D.frames.count;
  const L = D.links.length;
  const E = D.end_effectors.length;
  const size = D.extent;

  const viewer = new MeshCat.Viewer(document.getElementById("viewer"));
  // The default scene's grid is 20 m wide in 0.5 m cells: scale it to cells of about an eighth
  // of the robot's extent, rounded to 1, 2 or 5 times a power of ten.
  const grid = viewer.scene_tree.find(["Grid"]);
  const decade = Math.pow(10, Math.floor(Math.log10(size / 8)));
  const cell = decade * [1, 2, 5, 10].find(function (m) { return decade * m >= size / 8 / 1.5; });
  grid.object.scale.set(cell / 0.5, cell / 0.5, cell / 0.5);
  viewer.scene_tree.find(["Axes"]).object.scale.set(size / 2, size / 2, size / 2);

  function color(rgba) {
    return new THREE.Color(rgba[0], rgba[1], rgba[2]);
  }
  function material(rgba, extra) {
    const m = new THREE.MeshPhongMaterial(Object.assign({color: color(rgba), shininess: 30}, extra || {}));
    if (rgba[3] < 1) { m.transparent = true; m.opacity = rgba[3]; }
    return m;
  }
  function matrix(cols) {
    return new THREE.Matrix4().fromArray(cols);
  }
  function setPose(obj, p, i) {  // p: array of 7 floats (x, y, z, qx, qy, qz, qw) from index i
    obj.position.set(p[i], p[i + 1], p[i + 2]);
    obj.quaternion.set(p[i + 3], p[i + 4], p[i + 5], p[i + 6]);
  }

  // --- the robot: one group per link, its visuals children with fixed placements -----------
  const linkNodes = [];
  for (let j = 0; j < L; j++) {
    viewer.set_object(["robot", D.links[j]], new THREE.Group());
    linkNodes.push(viewer.scene_tree.find(["robot", D.links[j]]).object);
  }
  D.visuals.forEach(function (v, k) {
    const path = ["robot", D.links[v.link], "visual_" + k];
    let mesh = null;
    if (v.shape === "box") mesh = new THREE.Mesh(new THREE.BoxGeometry(v.size[0], v.size[1], v.size[2]), material(v.rgba));
    else if (v.shape === "cylinder") mesh = new THREE.Mesh(new THREE.CylinderGeometry(v.radius, v.radius, v.length, 32), material(v.rgba));
    else if (v.shape === "sphere") mesh = new THREE.Mesh(new THREE.SphereGeometry(v.radius, 32, 16), material(v.rgba));
    if (mesh !== null) {
      mesh.matrixAutoUpdate = false;
      mesh.matrix.copy(matrix(v.matrix));
      viewer.set_object(path, mesh);
      return;
    }
    // Meshes go through the viewer's own STL / OBJ / Collada loaders.
    const uuid = "geometry_" + k;
    viewer.set_object_from_json(path, {
      metadata: {version: 4.5, type: "Object"},
      geometries: [{uuid: uuid, type: "_meshfile_geometry", format: v.format,
                    data: v.format === "stl" ? bytesOf(v.data) : v.data}],
      materials: [{uuid: "material_" + k, type: "MeshPhongMaterial",
                   color: color(v.rgba).getHex(), transparent: v.rgba[3] < 1, opacity: v.rgba[3]}],
      object: {uuid: "object_" + k, type: "Mesh", geometry: uuid, material: "material_" + k,
               matrix: matrix(v.matrix).scale(new THREE.Vector3(v.scale[0], v.scale[1], v.scale[2])).toArray()},
    });
  });

  // --- paths: drawn up to the current frame ---------------------------------------------------
  function path(name, values, stride, offset, rgba, dashed) {
    const pts = new Float32Array(F * 3);
    for (let k = 0; k < F; k++) for (let a = 0; a < 3; a++) pts[3 * k + a] = values[k * stride + offset + a];
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.BufferAttribute(pts, 3));
    const m = dashed ? new THREE.LineDashedMaterial({color: color(rgba), dashSize: size / 60, gapSize: size / 80})
                     : new THREE.LineBasicMaterial({color: color(rgba)});
    const line = new THREE.Line(geometry, m);
    if (dashed) line.computeLineDistances();
    line.frustumCulled = false;
    viewer.set_object(name, line);
    return geometry;
  }
  function marker(name, radius, rgba) {
    const s = new THREE.Mesh(new THREE.SphereGeometry(radius, 24, 12), material(rgba, {depthTest: false}));
    s.renderOrder = 10;
    viewer.set_object(name, s);
    return viewer.scene_tree.find(name).object;
  }
  const paths = [];
  const basePts = new Float32Array(F * 3);
  for (let k = 0; k < F; k++) for (let a = 0; a < 3; a++) basePts[3 * k + a] = poses[(k * L + D.base_link) * 7 + a];
  paths.push(path(["trails", "base"], basePts, 3, 0, [0.1, 0.1, 0.1, 1], false));
  let comMarker = null;
  if (com !== null) {
    paths.push(path(["trails", "com"], com, 3, 0, [0.8, 0.0, 0.8, 1], false));
    comMarker = marker(["com"], size / 40, [0.85, 0.0, 0.85, 1]);
  }
  const targetMarkers = [];
  for (let e = 0; e < E; e++) {
    if (eePos !== null) paths.push(path(["trails", "ee_" + e], eePos, 3 * E, 3 * e, [0.9, 0.45, 0.0, 1], false));
    if (eeTarget !== null) {
      path(["targets", "path_" + e], eeTarget, 3 * E, 3 * e, [0.0, 0.6, 0.2, 1], true);
      targetMarkers.push(marker(["targets", "target_" + e], size / 60, [0.0, 0.75, 0.25, 1]));
    }
  }

  // --- thrusters: each firing one's plume, an arrow from the nozzle opposite to the force it
  // exerts on the base (outwards: a thruster pushes the base away from its exhaust), its length
  // scaled by force / max_force ------------------------------------------------------------
  const thr = D.thrusters;
  const arrows = [];
  if (thr) {
    viewer.set_object(["thrusters"], new THREE.Group());
    thr.names.forEach(function (name, i) {
      const dir = new THREE.Vector3().fromArray(thr.directions[i]).normalize().negate();
      const arrow = new THREE.ArrowHelper(dir, new THREE.Vector3().fromArray(thr.positions[i]), size / 4, 0xff3300,
                                          size / 24, size / 40);
      arrow.visible = false;
      viewer.set_object(["thrusters", name], arrow);
      arrows.push(arrow);
    });
  }
  const thrusterGroup = thr ? viewer.scene_tree.find(["thrusters"]).object : null;

  // --- the object and its grasp frames -------------------------------------------------------
  const obj = D.object;
  let objNode = null;
  if (obj) {
    viewer.set_object(["object", obj.name], new THREE.Group());
    objNode = viewer.scene_tree.find(["object", obj.name]).object;
    viewer.set_object(["object", obj.name, "box"], new THREE.Mesh(
      new THREE.BoxGeometry(obj.size[0], obj.size[1], obj.size[2]), material([0.2, 0.55, 0.95, 0.75])));
    obj.grasps.forEach(function (g) {
      const axes = new THREE.AxesHelper(Math.max(obj.size[0], obj.size[1], obj.size[2]) * 0.6);
      axes.matrixAutoUpdate = false;
      axes.matrix.copy(matrix(g.matrix));
      viewer.set_object(["object", obj.name, "grasp_" + g.name], axes);
    });
  }

  // --- camera: the whole run in view ---------------------------------------------------------
  const lo = D.bounds[0], hi = D.bounds[1];
  const centre = new THREE.Vector3((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2);
  const away = D.planar ? new THREE.Vector3(0.35, -0.75, 1.0) : new THREE.Vector3(1.0, -1.2, 0.8);
  const eye = centre.clone().add(away.normalize().multiplyScalar(1.1 * size + 0.2));
  // The viewer's camera hangs in a group turned +90 deg about x (three.js is y-up): (x, y, z) -> (x, z, -y).
  function turned(v) { return [v.x, v.z, -v.y]; }
  viewer.set_property(["Cameras", "default", "rotated", "<object>"], "position", turned(eye));
  viewer.controls.target.set(...turned(centre));
  viewer.controls.update();

  // --- heads-up display and controls ---------------------------------------------------------
  const hud = document.getElementById("hud");
  const slider = document.getElementById("scrub");
  const playButton = document.getElementById("play");
  const speedSelect = document.getElementById("speed");
  slider.max = String(F - 1);
  document.getElementById("title").textContent = D.title;
  const fr = D.frames;
  document.getElementById("rate").textContent = fr.stride > 1
    ? `replay: ${fr.fps.toPrecision(3)} frames per simulated s, 1 in ${fr.stride} samples of the ${fr.log_rate.toPrecision(3)} Hz log (${F} frames)`
    : `replay: every sample of the ${fr.log_rate.toPrecision(3)} Hz log (${F} frames)`;
  // The legend lists what this run has.
  const legend = [["#1a1a1a", "base trail"]];
  if (com !== null) legend.push(["#d900d9", "system CoM: marker and path"]);
  if (eePos !== null && E > 0) legend.push(["#e67300", "end-effector path"]);
  if (eeTarget !== null) legend.push(["#00bf40", "end-effector target (dashed: its path)"]);
  if (D.thrusters) legend.push(["#ff3300", "thruster plume (opposite to its force on the base), length \u221d force"]);
  if (D.object) legend.push(["#338cf2", D.object.free ? "target object (captured), grasp frames" : "held object, grasp frames"]);
  const legendBox = document.getElementById("legend");
  legend.forEach(function (entry) {
    const row = document.createElement("div");
    const swatch = document.createElement("span");
    swatch.style.background = entry[0];
    row.appendChild(swatch);
    row.appendChild(document.createTextNode(entry[1]));
    legendBox.appendChild(row);
  });

  // What the page shows, for scripts (the tests): frame, t (s), playing, speed; ready once the
  // first frame is on screen, drawn once the frame last shown is; setVisible(name, on) shows or
  // hides a top-level scene node ("robot", "trails", "com", "targets", "thrusters", "object").
  const state = {frame: 0, t: T[0], playing: false, speed: 1, ready: false, drawn: false};
  state.setVisible = function (name, on) {
    viewer.set_property([name], "visible", on);
    viewer.render();
  };
  state.viewer = viewer;  // the MeshCat viewer, for scripts that want to look further
  window.replay = state;

  function frameAt(t) {  // last frame at or before t
    let lo = 0, hi = F - 1;
    if (t >= T[hi]) return hi;
    while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (T[mid] <= t) lo = mid; else hi = mid; }
    return lo;
  }

  function show(k) {
    state.frame = k;
    for (let j = 0; j < L; j++) setPose(linkNodes[j], poses, (k * L + j) * 7);
    paths.forEach(function (g) { g.setDrawRange(0, k + 1); });
    if (comMarker) comMarker.position.set(com[3 * k], com[3 * k + 1], com[3 * k + 2]);
    targetMarkers.forEach(function (m, e) {
      const i = k * 3 * E + 3 * e;
      const ok = isFinite(eeTarget[i]);
      m.visible = ok;
      if (ok) m.position.set(eeTarget[i], eeTarget[i + 1], eeTarget[i + 2]);
    });
    if (thr) {
      setPose(thrusterGroup, poses, (k * L + D.base_link) * 7);
      const n = thr.names.length;
      for (let i = 0; i < n; i++) {
        const f = thrForces[k * n + i], fmax = thr.max_force[i];
        arrows[i].visible = f > 1e-3 * fmax;
        if (arrows[i].visible) {
          const len = Math.max(size / 4 * f / fmax, size / 40);
          arrows[i].setLength(len, Math.min(size / 24, len / 2), size / 40);
        }
      }
    }
    if (objNode) setPose(objNode, objPoses, k * 7);
    slider.value = String(k);
    const mode = D.mode_names[D.modes[k]];
    let text = `t = ${T[k].toFixed(2)} s of ${T[F - 1].toFixed(2)} s · mode: ${mode}`;
    if (captured !== null) text += captured[k] > 0.5 ? " · grasp closed" : " · target free";
    hud.textContent = text;
    viewer.render();
    state.drawn = false;
    requestAnimationFrame(function () { requestAnimationFrame(function () { state.drawn = true; }); });
  }

  let last = null;
  function tick(now) {
    if (state.playing) {
      if (last !== null) state.t += (now - last) / 1000 * state.speed;
      if (state.t >= T[F - 1]) { state.t = T[F - 1]; setPlaying(false); }
      const k = frameAt(state.t);
      if (k !== state.frame) show(k);
    }
    last = now;
    requestAnimationFrame(tick);
  }
  function setPlaying(on) {
    if (on && state.frame >= F - 1) { state.t = T[0]; show(0); }
    state.playing = on;
    playButton.textContent = on ? "pause" : "play";
  }
  playButton.addEventListener("click", function () { setPlaying(!state.playing); });
  slider.addEventListener("input", function () {
    const k = parseInt(slider.value, 10);
    state.t = T[k];
    show(k);
  });
  speedSelect.addEventListener("change", function () { state.speed = parseFloat(speedSelect.value); });
  document.addEventListener("keydown", function (ev) {
    if (ev.target.tagName === "SELECT") return;
    if (ev.key === " ") { setPlaying(!state.playing); ev.preventDefault(); }
    else if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
      const k = Math.min(F - 1, Math.max(0, state.frame + (ev.key === "ArrowRight" ? 1 : -1)));
      state.t = T[k];
      show(k);
    }
  });

  function fromFragment() {
    const args = new URLSearchParams(window.location.hash.slice(1));
    const t = parseFloat(args.get("t"));
    state.t = isFinite(t) ? Math.min(Math.max(t, T[0]), T[F - 1]) : T[0];
    show(frameAt(state.t));
    setPlaying(!isFinite(t) || args.has("play"));
  }
  window.addEventListener("hashchange", fromFragment);
  fromFragment();
  requestAnimationFrame(tick);
  // Ready once the first frame is drawn (what a test waits for before it looks at the pixels).
  requestAnimationFrame(function () { requestAnimationFrame(function () { state.ready = true; }); });
})();
