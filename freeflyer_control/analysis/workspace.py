"""Workspaces of planar free-floating robots: reachable, path-dependent, path-independent.

With zero momentum the system CoM stays fixed in inertial space, so the end-effector position
is measured from it (Papadopoulos). For a planar tree of revolute joints,

    E - C = sum_g Rot(phi_g) b_g

with one *barycentric vector* b_g (Vafa & Dubowsky's virtual manipulator) per independently
turning body: the base (with its reaction wheels, held at angle 0) and each arm link. phi_g
are the bodies' absolute angles; the base yaw and the joint angles set them independently, so
the radius R = |E - C| depends on the joint angles only and the reachable set is an annulus:

    R_max = sum_g |b_g|,    R_min = max(0, 2 max_g |b_g| - R_max)

(the polygon inequality: the vectors close up unless one is longer than all the others
together). b_g is read from the model's numbers: every point x on body k is a chain of
body-fixed vectors from the base origin (``_path_vectors``), and E - C = sum_i mu_i (E - C_i)
with mu_i = m_i / M.

A radius is in the *path-dependent workspace* (PDW) when some configuration reaching it is
dynamically singular (the position block of the floating-mode GJM, J*_xy, loses rank), in the
*path-independent workspace* (PIW) when it is reachable and none is. Base yaw only rotates
J*_xy, so both are sets of radii: unions of radial intervals [[r_lo, r_hi], ...] that partition
[R_min, R_max]. The ends of an interval belong to the PDW.

Two methods:

* ``"exact"``: a planar arm whose configuration is two joints that both move the end-effector
  (J*_xy square). det J*_xy = 0 is a set of closed curves on the joint torus; R maps each one onto
  an interval [min, max], and the PDW is their union. The torus is sampled on a grid
  (vectorised), the curves are located by sign changes of det between grid neighbours and
  bisected onto the curve, grouped into connected curves (grid cells, wrapping around the
  torus), and each curve's minimum and maximum radius is refined by a zooming search along the
  curve (root finding for det = 0 at each step). Interval ends come out to ~1e-9 m.
* ``"raster"``: anything else planar (3+ links, several arms). Random configurations are
  binned by radius into rings. For a redundant arm the singular set has measure zero in
  configuration space (J*_xy is 2 x N: rank 1 needs all its 2x2 minors to vanish), so random
  samples never land on it, and the smallest sigma_min / sigma_max seen in a ring says little
  (on planar_4link it stays above 1e-2 in rings where singular configurations exist). So from
  some samples of each ring (the nearest to singular, and random ones) a batched
  Levenberg-Marquardt search looks for a configuration whose minors vanish at the ring's
  radius, and every singular configuration found seeds the same search in the neighbouring
  rings (continuation along the singular curves, until no ring changes). A ring is PDW when a
  search found one (sigma_min <= rtol sigma_max), or when it was never sampled (the
  conservative side), or when it holds R_max or R_min > 0 (always singular: grad R = 0 there);
  PIW otherwise. Interval ends are good to a ring width, and a PIW ring means "no singular
  configuration found", not a proof. On the two-joint arm the raster agrees with the exact
  method to a ring (``test/test_workspace.py``), and on planar_4link its intervals do not move
  with the random seed.

Joint limits are ignored (full turns), as in the papers; with limits the workspaces shrink.
Units: m, rad.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from freeflyer_control.analysis.singularity_map import (
    CHUNK,
    SINGULAR_RTOL,
    PlanarChain,
    gjm_and_position,
    gjm_batch,
    planar_chain,
    point_from_com,
    singular_values,
)
from freeflyer_control.errors import ModelError
from freeflyer_control.model.loader import FreeFlyerModel

Interval = tuple[float, float]

# Interval ends closer than this (m) are the same radius: the refined ends are good to ~1e-9 m.
_MERGE_TOL = 1e-9


@dataclass(frozen=True)
class Annulus:
    """Radii about the system CoM, m."""

    r_min: float
    r_max: float


@dataclass(frozen=True)
class RadialRaster:
    """Sampled configurations binned by radius (rings about the system CoM).

    Attributes:
        edges: (bins + 1,) ring radii, m.
        count: (bins,) samples per ring.
        min_ratio: (bins,) smallest sigma_min / sigma_max of J*_xy found in the ring, by the
            samples or the local search (inf if none).
        rtol: a ring with min_ratio <= rtol holds a singular configuration (PDW).
        samples: number of configurations sampled.
    """

    edges: np.ndarray
    count: np.ndarray
    min_ratio: np.ndarray
    rtol: float
    samples: int


@dataclass(frozen=True)
class TorusGrid:
    """det J*_xy and R on the grid of the exact method (for plots). axis: rad; (n, n) arrays."""

    joints: tuple[str, str]
    axis: np.ndarray
    det: np.ndarray
    radius: np.ndarray


@dataclass(frozen=True)
class Workspace:
    """Reachable annulus and the PIW / PDW of a point, as radii about the system CoM (m).

    Attributes:
        robot, frame: names.
        reachable: the reachable annulus.
        piw, pdw: sorted, disjoint intervals [r_lo, r_hi] whose union is [r_min, r_max].
        method: ``"exact"`` or ``"raster"`` (module docstring).
        columns: the joints whose GJM columns were tested for singularity.
        resolution: how far an interval end may be from the true one, m.
        raster / grid: the raw data of the method, for plots.
    """

    robot: str
    frame: str
    reachable: Annulus
    piw: tuple[Interval, ...]
    pdw: tuple[Interval, ...]
    method: str
    columns: tuple[str, ...]
    resolution: float
    raster: RadialRaster | None = None
    grid: TorusGrid | None = None

    def to_dict(self) -> dict:
        """JSON-ready summary (what ``freeflyer workspace --json`` prints)."""
        out = {
            "robot": self.robot,
            "frame": self.frame,
            "measured_from": "system CoM (fixed at zero momentum); radii in m",
            "reachable": {"r_min": self.reachable.r_min, "r_max": self.reachable.r_max},
            "piw": [list(i) for i in self.piw],
            "pdw": [list(i) for i in self.pdw],
            "method": self.method,
            "singularity_columns": list(self.columns),
            "resolution_m": self.resolution,
        }
        if self.raster is not None:
            out["raster"] = {
                "rings": int(self.raster.count.size),
                "samples": self.raster.samples,
                "pdw_rule": f"a ring is PDW if never sampled or a local search from its best "
                            f"samples found sigma_min <= {self.raster.rtol:g} sigma_max at its "
                            "radius; PIW rings: none found (not a proof)",
            }
        return out

    def plot(self, path: str | Path) -> Path:
        """Write a PNG: the PIW / PDW rings in the plane about the system CoM, next to the data
        they come from (exact: det J*_xy over the joint torus with the singular curves;
        raster: the smallest sigma_min / sigma_max per ring)."""
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
        from matplotlib.patches import Wedge

        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 5))
        rings = ((self.piw, "tab:green", "PIW"), (self.pdw, "tab:orange", "PDW"))
        for intervals, color, label in rings:
            for k, (lo, hi) in enumerate(intervals):
                ax.add_patch(Wedge((0, 0), hi, 0, 360, width=hi - lo, color=color,
                                   label=label if k == 0 else None))
        r = self.reachable.r_max * 1.1
        ax.plot([0], [0], "k+", label="system CoM")
        ax.set(xlim=(-r, r), ylim=(-r, r), aspect="equal", xlabel="x (m)", ylabel="y (m)",
               title=f"{self.robot}: workspaces of '{self.frame}' ({self.method})")
        ax.legend(loc="upper right", fontsize=8)
        if self.grid is not None:
            g = self.grid
            X, Y = np.meshgrid(g.axis, g.axis)
            shade = np.sign(g.det) * np.log10(1 + np.abs(g.det) / np.abs(g.det).max() * 1e3)
            image = ax2.imshow(shade, origin="lower", cmap="coolwarm", aspect="auto",
                               extent=(g.axis[0], g.axis[-1], g.axis[0], g.axis[-1]))
            fig.colorbar(image, ax=ax2, label="sign(det) log10(1 + 1e3 |det| / max|det|)")
            ax2.contour(X, Y, g.det, levels=[0.0], colors="black", linewidths=1.2)
            ends = sorted({v for iv in self.piw for v in iv})
            if ends:
                ax2.contour(X, Y, g.radius, levels=ends, colors="tab:green", linewidths=0.8,
                            linestyles="dashed")
            ax2.set(xlabel=f"{g.joints[1]} (rad)", ylabel=f"{g.joints[0]} (rad)",
                    title="det J*_xy (black: = 0; dashed: R at the PIW ends)")
        elif self.raster is not None:
            rs = self.raster
            mid = 0.5 * (rs.edges[1:] + rs.edges[:-1])
            ok = rs.count > 0
            ax2.semilogy(mid[ok], np.maximum(rs.min_ratio[ok], 1e-16), ".", ms=3)
            ax2.axhline(rs.rtol, color="tab:orange", label=f"rtol = {rs.rtol:g}")
            ax2.set(xlabel="R (m)", ylabel="min sigma_min / sigma_max in the ring",
                    title=f"{rs.samples} random configurations + a local search per ring")
            ax2.legend(fontsize=8)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path


# ---------------------------------------------------------------------------------------------
# Reachable workspace (closed form)


def barycentric_vectors(chain: PlanarChain) -> np.ndarray:
    """(n_joints + 1, 2): the barycentric vectors b_g, neutral-world axes, m.

    Row 0 belongs to the base (with everything held on it: reaction wheels), row 1 + i to the
    body turned by ``chain.joint_names[i]``; E - C = sum_g Rot(phi_g) b_g.
    """
    mu = chain.mass / chain.mass.sum()
    per_body = _path_vectors(chain, chain.frame_body, chain.frame_pos)
    for i in range(chain.n_bodies):
        per_body -= mu[i] * _path_vectors(chain, i, chain.com[i])
    out = np.zeros((chain.n_joints + 1, 2))
    for b in range(chain.n_bodies):
        out[_group(chain, b)] += per_body[b]
    return out


def reachable_annulus(chain: PlanarChain) -> Annulus:
    """[R_min, R_max] from the barycentric vector lengths (module docstring)."""
    lengths = np.linalg.norm(barycentric_vectors(chain), axis=1)
    r_max = float(lengths.sum())
    return Annulus(max(0.0, float(2.0 * lengths.max() - r_max)), r_max)


def radius(chain: PlanarChain, q: np.ndarray) -> np.ndarray:
    """|E - C| at configurations q (n, n_joints), m."""
    return np.hypot(*point_from_com(chain, q).T)


def _path_vectors(chain: PlanarChain, body: int, x: np.ndarray) -> np.ndarray:
    """(n_bodies, 2): x = sum_b Rot(phi_b) v_b over the bodies from the base to ``body``
    (v_b: from body b's joint to the next joint towards x, or to x itself)."""
    out = np.zeros((chain.n_bodies, 2))
    nxt = np.asarray(x, dtype=float)
    b = body
    while b >= 0:
        out[b] = nxt - chain.joint_pos[b]
        nxt, b = chain.joint_pos[b], chain.parent[b]
    return out


def _group(chain: PlanarChain, body: int) -> int:
    """Row of :func:`barycentric_vectors` whose angle ``body`` turns with."""
    while body > 0 and chain.q_index[body] < 0:  # a wheel (held) turns with its parent
        body = chain.parent[body]
    return 0 if body == 0 else 1 + int(chain.q_index[body])


# ---------------------------------------------------------------------------------------------
# PIW / PDW


# Bounds on the sizes a caller asks for (memory and time grow with them; measured on the
# two-link arm of test_workspace: grid 2048 takes about 0.4 GB more and 4 s, and both grow
# as grid^2). The raster runs in chunks, so its samples bound the time, not the memory.
MIN_GRID, MAX_GRID = 16, 2048
MAX_SAMPLES = 10**8
MAX_BINS = 10_000


def planar_workspace(
    ff: FreeFlyerModel,
    frame: str,
    *,
    point: Sequence[float] | None = None,
    method: str = "auto",
    grid: int = 512,
    samples: int = 1_000_000,
    bins: int = 200,
    rtol: float = SINGULAR_RTOL,
    seed: int = 0,
) -> Workspace:
    """Reachable, path-dependent and path-independent workspaces of a point (module docstring).

    Args:
        frame: the end-effector frame; point: a point in it, m (default its origin).
        method: ``"exact"`` (two-joint arm), ``"raster"`` or ``"auto"`` (exact where it applies).
        grid: points per joint of the exact method's torus grid (grid^2 configurations).
        samples, bins, rtol, seed: the raster's random configurations, rings, singular
            threshold and random seed.

    Raises:
        ModelError: the base is spatial, or a joint is not revolute about z.
        ValueError: ``method="exact"`` on a robot it does not apply to, or bad sizes.
    """
    if ff.base != "planar":
        raise ModelError(
            f"workspaces are computed for planar bases; robot '{ff.name}' has a spatial base"
        )
    chain = planar_chain(ff, frame, point)
    columns = chain.frame_joints
    exact_ok = exact_method_applies(chain)
    if method not in ("auto", "exact", "raster"):
        raise ValueError(f"method must be 'auto', 'exact' or 'raster', got '{method}'")
    if method == "exact" and not exact_ok:
        raise ValueError(
            f"the exact PIW/PDW is computed for a single arm of two joints that both move the "
            f"end-effector; robot '{ff.name}' has arm joints {list(chain.joint_names)} and "
            f"'{frame}' is moved by {list(columns)}: use method='raster'"
        )
    reach = reachable_annulus(chain)
    if method == "exact" or (method == "auto" and exact_ok):
        if not MIN_GRID <= grid <= MAX_GRID:
            raise ValueError(f"grid must be from {MIN_GRID} to {MAX_GRID} points per joint, got {grid}")
        pdw, torus = _exact_pdw(chain, reach, grid)
        raster, resolution = None, 1e-9
    else:
        if not (1 <= samples <= MAX_SAMPLES and 1 <= bins <= MAX_BINS):
            raise ValueError(f"samples must be from 1 to {MAX_SAMPLES:.0e} and bins from 1 to "
                             f"{MAX_BINS}, got {samples} and {bins}")
        pdw, raster = _raster_pdw(chain, reach, samples, bins, rtol, seed)
        torus, resolution = None, float(raster.edges[1] - raster.edges[0])
    return Workspace(
        robot=ff.name, frame=frame, reachable=reach,
        piw=_complement(pdw, reach), pdw=tuple(pdw), method="exact" if raster is None else "raster",
        columns=columns, resolution=resolution, raster=raster, grid=torus,
    )


def exact_method_applies(chain: PlanarChain) -> bool:
    """True when the configuration is two joints that both move the point (J*_xy square)."""
    return chain.n_joints == 2 and len(chain.frame_joints) == 2


def _exact_pdw(chain: PlanarChain, reach: Annulus, n: int) -> tuple[list[Interval], TorusGrid]:
    """Union over the curves det J*_xy = 0 of [min R, max R] (module docstring)."""
    from scipy import ndimage

    h = 2.0 * np.pi / n
    axis = -np.pi + h * np.arange(n)
    a, b = np.meshgrid(axis, axis, indexing="ij")
    q = np.stack([a.ravel(), b.ravel()], axis=1)
    det = np.empty(q.shape[0])
    rad = np.empty(q.shape[0])
    for start in range(0, q.shape[0], CHUNK):
        part = slice(start, start + CHUNK)
        det[part], rad[part] = _det_and_radius(chain, q[part])
    D, R = det.reshape(n, n), rad.reshape(n, n)

    # Grid cells (i, j)-(i+1, j+1), wrapping around the torus, with det of both signs (or a
    # zero) at their corners: the singular curves pass through them.
    corners = np.stack([D, np.roll(D, -1, 0), np.roll(D, -1, 1), np.roll(np.roll(D, -1, 0), -1, 1)])
    crossed = (corners.min(axis=0) <= 0) & (corners.max(axis=0) >= 0)
    labels, count = ndimage.label(crossed)  # 4-connected: a curve crosses cell edges
    labels = _wrap_labels(labels, count)

    # Points on the curves: every grid edge with a sign change, bisected. An edge belongs to
    # the cell it starts, which is crossed.
    points, curve = [], []
    for ax in (0, 1):
        D1 = np.roll(D, -1, ax)
        i, j = np.nonzero(D * D1 <= 0)
        step = np.array([h, 0.0]) if ax == 0 else np.array([0.0, h])
        start = np.stack([axis[i], axis[j]], axis=1)
        points.append(_bisect(chain, start, start + step, D[i, j]))
        curve.append(labels[i, j])
    points, curve = np.concatenate(points), np.concatenate(curve)
    radii = _det_and_radius(chain, points)[1]

    intervals = []
    for c in np.unique(curve):
        mine = np.flatnonzero(curve == c)
        lo = _refine_extreme(chain, points[mine[np.argmin(radii[mine])]], h, -1.0)
        hi = _refine_extreme(chain, points[mine[np.argmax(radii[mine])]], h, +1.0)
        intervals.append((lo, hi))
    torus = TorusGrid(chain.frame_joints[:2], axis, D, R)
    return _union(intervals, reach), torus


def _det_and_radius(chain: PlanarChain, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """det J*_xy (2x2, m^2 per rad^2) and R (m) at configurations q (n, 2)."""
    J, rel = gjm_and_position(chain, q)
    return J[:, 0, 0] * J[:, 1, 1] - J[:, 0, 1] * J[:, 1, 0], np.hypot(*rel.T)


def _det(chain: PlanarChain, q: np.ndarray) -> np.ndarray:
    J = gjm_batch(chain, q)
    return J[:, 0, 0] * J[:, 1, 1] - J[:, 0, 1] * J[:, 1, 0]


def _bisect(chain: PlanarChain, a: np.ndarray, b: np.ndarray, det_a: np.ndarray) -> np.ndarray:
    """Points where det = 0 on the segments a-b (n, 2), det changing sign along each."""
    a, b = a.copy(), b.copy()
    sign_a = np.sign(det_a)
    # Down to 1e-13 rad: a few hundred ulps of pi, below what any radius here needs.
    steps = int(np.ceil(np.log2(max(np.abs(b - a).max(), 1e-13) / 1e-13)))
    for _ in range(steps):
        mid = 0.5 * (a + b)
        same = np.sign(_det(chain, mid)) == sign_a
        a[same], b[~same] = mid[same], mid[~same]
    return 0.5 * (a + b)


def _refine_extreme(chain: PlanarChain, z: np.ndarray, h: float, sense: float) -> float:
    """The extreme radius (sense +1: max, -1: min) along the singular curve near z.

    The curve is followed as s(t): t is the joint along which det changes least (so that the
    other one, s, solves det = 0 well), t scanned on a window that zooms in on the best point
    (or moves with it when the best is at an edge); s is bisected within a bracket around the
    linear prediction at each t.
    """
    eps = 1e-7
    grad = np.array([
        _det(chain, np.array([z + [eps, 0.0], z - [eps, 0.0]])) @ [1.0, -1.0],
        _det(chain, np.array([z + [0.0, eps], z - [0.0, eps]])) @ [1.0, -1.0],
    ])
    s_axis = 1 if abs(grad[1]) >= abs(grad[0]) else 0
    t_axis = 1 - s_axis
    slope = -grad[t_axis] / grad[s_axis] if grad[s_axis] != 0 else 0.0  # |slope| <= 1
    best = z.copy()
    best_r = float(_det_and_radius(chain, z[None])[1][0])
    width = 3.0 * h
    for _ in range(80):
        t = best[t_axis] + np.linspace(-width, width, 33)
        s_mid = best[s_axis] + slope * (t - best[t_axis])
        lo, hi = np.empty((t.size, 2)), np.empty((t.size, 2))
        lo[:, t_axis] = hi[:, t_axis] = t
        lo[:, s_axis], hi[:, s_axis] = s_mid - 2.0 * width, s_mid + 2.0 * width
        det_lo, det_hi = _det(chain, lo), _det(chain, hi)
        ok = det_lo * det_hi <= 0
        if not ok.any():
            break
        on_curve = _bisect(chain, lo[ok], hi[ok], det_lo[ok])
        r = _det_and_radius(chain, on_curve)[1]
        k = int(np.argmax(sense * r))
        at_edge = np.flatnonzero(ok)[k] in (0, t.size - 1)
        if sense * r[k] > sense * best_r:
            best, best_r = on_curve[k], float(r[k])
        else:
            at_edge = False  # nothing better in the window: the extreme is at its centre
        if not at_edge:
            width /= 8.0  # zoom in; otherwise the window moves with the best point
        if width < 1e-7:
            # The window's 33 points are 6e-9 rad apart; R is quadratic about its extreme
            # along the curve, so the best of them is within ~1e-16 m of it.
            break
    return best_r


def _wrap_labels(labels: np.ndarray, count: int) -> np.ndarray:
    """Merge the labels of cells that touch across the torus' seams (union-find)."""
    root = np.arange(count + 1)

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    for first, last in ((labels[0], labels[-1]), (labels[:, 0], labels[:, -1])):
        for u, v in zip(first, last):
            if u and v:
                root[find(u)] = find(v)
    return np.array([find(x) for x in range(count + 1)])[labels]


def _raster_pdw(
    chain: PlanarChain, reach: Annulus, samples: int, bins: int, rtol: float, seed: int,
    starts: int = 4,
) -> tuple[list[Interval], RadialRaster]:
    """Rings (module docstring): random samples, then a local search for a singular
    configuration at each ring's mid radius from ``2 starts`` of its samples."""
    rng = np.random.default_rng(seed)
    edges = np.linspace(0.0, reach.r_max, bins + 1)
    cols = [chain.joint_names.index(j) for j in chain.frame_joints]
    count = np.zeros(bins, dtype=np.int64)
    # Starts per ring: the `starts` best samples (nearest to singular) and `starts` random ones
    # (other branches of the level set: on planar_4link the best ones alone missed singular
    # configurations in a few rings).
    keep_q = np.zeros((0, chain.n_joints))
    keep_ring, keep_ratio, keep_key = np.zeros(0, dtype=int), np.zeros(0), np.zeros(0)
    for start in range(0, samples, CHUNK):
        q = rng.uniform(-np.pi, np.pi, (min(CHUNK, samples - start), chain.n_joints))
        ratio, R = _ratio_and_radius(chain, cols, q)
        ring = np.clip(np.searchsorted(edges, R, "right") - 1, 0, bins - 1)
        count += np.bincount(ring, minlength=bins)
        keep_q, keep_ring, keep_ratio, keep_key = (np.concatenate(x) for x in (
            (keep_q, q), (keep_ring, ring), (keep_ratio, ratio), (keep_key, rng.random(ring.size))))
        chosen = np.union1d(_best_per_ring(keep_ring, keep_ratio, starts),
                            _best_per_ring(keep_ring, keep_key, starts))
        keep_q, keep_ring = keep_q[chosen], keep_ring[chosen]
        keep_ratio, keep_key = keep_ratio[chosen], keep_key[chosen]

    # Search at the middle of the reachable part of each ring; a result counts for its ring
    # only if the search stayed in that part.
    lo, hi = np.maximum(edges[:-1], reach.r_min), np.minimum(edges[1:], reach.r_max)
    target = 0.5 * (lo + hi)
    min_ratio = np.full(bins, np.inf)
    np.minimum.at(min_ratio, keep_ring, keep_ratio)
    witness = np.full((bins, chain.n_joints), np.nan)  # a singular configuration per ring

    def search(q0: np.ndarray, rings: np.ndarray) -> None:
        q = _singular_search(chain, cols, q0, target[rings], edges[1] - edges[0])
        ratio, R = _ratio_and_radius(chain, cols, q)
        ratio = np.where(np.abs(R - target[rings]) <= 0.5 * (hi - lo)[rings], ratio, np.inf)
        np.minimum.at(min_ratio, rings, ratio)
        witness[rings[ratio <= rtol]] = q[ratio <= rtol]

    search(keep_q, keep_ring)
    # Continuation along the singular curves. The PDW is the image of connected curves, so a
    # singular configuration found in one ring is the natural start for its neighbours: the
    # search then only has to slide along the curve by one ring. On planar_4link this finds
    # singular configurations the random starts missed at the edge of a PIW interval.
    for _ in range(bins):
        found = ~np.isnan(witness[:, 0])
        rings, starts_q = [], []
        for side in (-1, 1):
            k = np.flatnonzero(~found & (count > 0))
            k = k[(k + side >= 0) & (k + side < bins)]
            k = k[found[k + side]]
            rings.append(k)
            starts_q.append(witness[k + side])
        rings = np.concatenate(rings)
        if rings.size == 0:
            break
        search(np.concatenate(starts_q), rings)
        if (~np.isnan(witness[:, 0])).sum() == found.sum():
            break
    raster = RadialRaster(edges, count, min_ratio, rtol, samples)
    regular = (count > 0) & np.isnan(witness[:, 0]) & (min_ratio > rtol)
    # R_max, and R_min > 0, are reached where every barycentric vector is (anti)aligned: there
    # grad R = 0, so J*_xy has no radial row and is singular. Their rings are PDW whatever the
    # search found (it looks at the ring's middle, where the level set can be singular-free).
    ends = [reach.r_max] + ([reach.r_min] if reach.r_min > 0 else [])
    regular[np.clip(np.searchsorted(edges, ends, "right") - 1, 0, bins - 1)] = False
    pdw = [(float(edges[k]), float(edges[k + 1])) for k in np.flatnonzero(~regular)]
    return _union(pdw, reach), raster


def _ratio_and_radius(
    chain: PlanarChain, cols: list[int], q: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """sigma_min / sigma_max of J*_xy (the frame's arm columns) and R, m, at configurations q."""
    J, rel = gjm_and_position(chain, q)
    smin, smax = singular_values(J[:, :2][:, :, cols])
    return smin / np.where(smax > 0, smax, np.inf), np.hypot(*rel.T)


def _best_per_ring(ring: np.ndarray, ratio: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k smallest ratios of each ring."""
    order = np.lexsort((ratio, ring))
    sorted_ring = ring[order]
    first = np.searchsorted(sorted_ring, sorted_ring, "left")  # start of each one's ring group
    return order[np.arange(order.size) - first < k]


def _singular_search(
    chain: PlanarChain, cols: list[int], q: np.ndarray, target: np.ndarray, width: float,
    iterations: int = 40,
) -> np.ndarray:
    """Levenberg-Marquardt, batched: from each q, a configuration with J*_xy singular at
    radius ``target``. Residuals: the 2x2 minors of J*_xy over sigma_max^2 (their squares sum
    to (sigma_min / sigma_max)^2) and (R - target) / width. Jacobian by central differences."""
    pairs = [(i, j) for i in range(len(cols)) for j in range(i + 1, len(cols))]

    def residual(x: np.ndarray) -> np.ndarray:
        J, rel = gjm_and_position(chain, x)
        A = J[:, :2][:, :, cols]
        smax2 = np.maximum(np.einsum("nrj,nrj->n", A, A), 1e-300)  # ||A||_F^2 ~ sigma_max^2
        minors = [A[:, 0, i] * A[:, 1, j] - A[:, 0, j] * A[:, 1, i] for i, j in pairs]
        return np.stack([*(m / smax2 for m in minors), (np.hypot(*rel.T) - target) / width], axis=1)

    q = q.copy()
    f = residual(q)
    cost = np.einsum("nm,nm->n", f, f)
    lam = np.full(q.shape[0], 1e-3)
    step = 1e-6  # rad: central differences good to ~1e-10 on these O(1) residuals
    n = q.shape[1]
    for _ in range(iterations):
        Jr = np.empty((q.shape[0], f.shape[1], n))
        for k in range(n):
            dq = np.zeros(n)
            dq[k] = step
            Jr[:, :, k] = (residual(q + dq) - residual(q - dq)) / (2 * step)
        H = np.einsum("nmi,nmj->nij", Jr, Jr)
        g = np.einsum("nmi,nm->ni", Jr, f)
        # Marquardt's scaling (damp each direction by its own curvature), plus a floor.
        scale = np.eye(n) * np.diagonal(H, axis1=1, axis2=2)[:, None, :] + 1e-12 * np.eye(n)
        H_damped = H + lam[:, None, None] * scale
        delta = -np.linalg.solve(H_damped, g[..., None])[..., 0]
        f_new = residual(q + delta)
        cost_new = np.einsum("nm,nm->n", f_new, f_new)
        better = cost_new < cost
        q[better] += delta[better]
        f[better], cost[better] = f_new[better], cost_new[better]
        lam = np.where(better, lam / 3.0, lam * 4.0)
    return q


def _union(intervals: list[Interval], reach: Annulus) -> list[Interval]:
    """Sorted union of intervals, clipped to the reachable annulus; ends within _MERGE_TOL
    of each other or of the annulus' own ends are snapped together."""
    out: list[list[float]] = []
    for lo, hi in sorted(intervals):
        lo, hi = max(lo, reach.r_min), min(hi, reach.r_max)
        if lo - reach.r_min < _MERGE_TOL:
            lo = reach.r_min
        if reach.r_max - hi < _MERGE_TOL:
            hi = reach.r_max
        if hi < lo:
            continue
        if out and lo <= out[-1][1] + _MERGE_TOL:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


def _complement(pdw: Sequence[Interval], reach: Annulus) -> tuple[Interval, ...]:
    """[R_min, R_max] minus the PDW, as closed intervals sharing their ends with the PDW."""
    out, at = [], reach.r_min
    for lo, hi in pdw:
        if lo > at:
            out.append((at, lo))
        at = max(at, hi)
    if at < reach.r_max:
        out.append((at, reach.r_max))
    return tuple(out)
