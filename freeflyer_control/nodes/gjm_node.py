"""gjm_node: publishes the Generalized Jacobian of each configured frame, live.

Subscribes /joint_states, /base/odom and /mode (std_msgs/String, transient local). For each frame
F it publishes at ``rate``:
  /gjm/F             std_msgs/Float64MultiArray  rows x cols, row-major; dims labelled
                     "twist" (vx vy vz wx wy wz, planar vx vy wz, world axes) and "actuated"
  /gjm/F/columns     std_msgs/String (transient local)  the column order: comma-separated arm
                     joint names, then the mode's commanded base velocities
  /gjm/F/singularity std_msgs/Float64MultiArray  [sigma_min, manipulability, condition number]
                     of the whole matrix (unchanged layout)
  /osi/F             std_msgs/Float64MultiArray  the operational-space inertia Lambda of F's
                     origin in the current mode, rows x rows, row-major, both dims labelled with
                     the row names ("vx,vy,vz,wx,wy,wz", planar "vx,vy,wz"; world axes, the
                     GJM's rows); not published while Lambda is singular (reported on
                     /diagnostics instead)
  /gjm/F/singularity/blocks  std_msgs/Float64MultiArray  3 x 4, row-major: rows translational,
                     rotational, full (dim label "translational,rotational,full"), columns
                     sigma_min, manipulability, condition_number, rank. The whole matrix can
                     look healthy while its translational block is singular (physics.singularity)
and /freeflyer/markers (visualization_msgs/MarkerArray): the system CoM, the linear and angular
momentum at the CoM, and the end-effector frames' positions, for rviz; /diagnostics
(``freeflyer: gjm``): WARN naming each frame and block whose sigma_min is below ``sigma_warn``
(logged once each time a frame comes near a singularity), every block's measures, refused
messages.
"""

from __future__ import annotations

from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from visualization_msgs.msg import Marker, MarkerArray

from freeflyer_control.nodes.common import (
    LATCHED_QOS,
    ROBOT_PARAMS,
    STATE_PUB_QOS,
    STATE_SUB_QOS,
    Param,
    declare,
    diagnostics,
    multiarray,
    robot_from_parameters,
    spin_node,
    vector_msg,
)
from freeflyer_control.physics.momentum import centroidal_momentum
from freeflyer_control.physics.singularity import SIGMA_NEAR
from freeflyer_control.ros.conversions import (
    ErrorCounter,
    JointStateReader,
    MessageError,
    read_odometry,
    state_from_readings,
)
from freeflyer_control.runtime.gjm_server import GjmServer

PARAMS = ROBOT_PARAMS + (
    Param("frames", [""], "frames to publish the GJM of (empty: the end-effectors)", read_only=True),
    Param("rate", 50.0, "publication rate, Hz", range=(0.1, 1000.0), read_only=True),
    Param("momentum_arrow_scale", 5.0, "rviz arrow length per unit momentum, m/(kg m/s)",
          range=(0.0, 1000.0)),
    Param("sigma_warn", SIGMA_NEAR, "a GJM block (translational, rotational, full) with a smaller "
          "sigma_min is reported on /diagnostics, m/rad on translational rows", range=(0.0, 10.0),
          read_only=True),
    Param("diagnostics_rate", 2.0, "diagnostics publication rate, Hz", range=(0.1, 50.0), read_only=True),
)


class GjmNode(Node):
    def __init__(self):
        super().__init__("gjm_node")
        p = declare(self, PARAMS)
        self.ff = robot_from_parameters(p)
        self.server = GjmServer(self.ff, tuple(f for f in p["frames"] if f), sigma_warn=p["sigma_warn"])
        self.reader = JointStateReader(self.ff.joint_names)
        self.errors = ErrorCounter()
        self.joints = self.base = None
        self.data = self.ff.create_data()
        self.pub = {f: self.create_publisher(Float64MultiArray, f"gjm/{f}", STATE_PUB_QOS) for f in self.server.frames}
        self.pub_cols = {f: self.create_publisher(String, f"gjm/{f}/columns", LATCHED_QOS) for f in self.server.frames}
        self.pub_sing = {f: self.create_publisher(Float64MultiArray, f"gjm/{f}/singularity", STATE_PUB_QOS)
                         for f in self.server.frames}
        self.pub_blocks = {f: self.create_publisher(Float64MultiArray, f"gjm/{f}/singularity/blocks", STATE_PUB_QOS)
                           for f in self.server.frames}
        self.pub_osi = {f: self.create_publisher(Float64MultiArray, f"osi/{f}", STATE_PUB_QOS) for f in self.server.frames}
        self.pub_markers = self.create_publisher(MarkerArray, "freeflyer/markers", STATE_PUB_QOS)
        self.pub_diag = self.create_publisher(DiagnosticArray, "diagnostics", 10)
        self.columns: dict[str, str] = {}
        self.outputs: dict = {}
        self.create_subscription(JointState, "joint_states", self._on_joints, STATE_SUB_QOS)
        self.create_subscription(Odometry, "base/odom", self._on_odom, STATE_SUB_QOS)
        self.create_subscription(String, "mode", self._on_mode, LATCHED_QOS)
        self.create_timer(1.0 / p["rate"], self._publish)
        self.create_timer(1.0 / p["diagnostics_rate"], self._diagnose)

    def _on_joints(self, msg: JointState) -> None:
        try:
            self.joints = self.reader.read_msg(msg)
        except MessageError as exc:
            self.errors.record(exc)

    def _on_odom(self, msg: Odometry) -> None:
        try:
            self.base = read_odometry(msg)
        except MessageError as exc:
            self.errors.record(exc)

    def _on_mode(self, msg: String) -> None:
        try:
            self.server.set_mode(msg.data)
        except ValueError as exc:
            self.get_logger().error(f"ignoring /mode '{msg.data}': {exc}")

    def _publish(self) -> None:
        if self.joints is None or self.base is None:
            return
        state = state_from_readings(self.ff, self.joints, self.base)
        self.outputs = self.server.compute(state)
        for frame, out in self.outputs.items():
            self.pub[frame].publish(multiarray(out.array))
            m = out.measures
            self.pub_sing[frame].publish(vector_msg([m.sigma_min, m.manipulability, m.condition_number],
                                                    "sigma_min,manipulability,condition_number"))
            self.pub_blocks[frame].publish(multiarray(out.blocks_array))
            if out.osi_array is not None:
                self.pub_osi[frame].publish(multiarray(out.osi_array))
            cols = ",".join(out.gjm.column_names)
            if self.columns.get(frame) != cols:
                self.columns[frame] = cols
                self.pub_cols[frame].publish(String(data=cols))
        self.pub_markers.publish(self._markers(state))

    def _diagnose(self) -> None:
        status = self.server.singularity_status(self.outputs)
        if status.announce:
            self.get_logger().warning(status.message)
        values = {**status.values, "refused_messages": self.errors.total, "last_refusal": self.errors.last}
        self.pub_diag.publish(diagnostics(self, "freeflyer: gjm", status.level, status.message, values))

    def _markers(self, state) -> MarkerArray:
        h = centroidal_momentum(self.ff, self.data, state)
        com = self.data.com[0]
        scale = self.get_parameter("momentum_arrow_scale").value
        stamp = self.get_clock().now().to_msg()

        def marker(ident, kind, rgba, size):
            mk = Marker()
            mk.header.frame_id, mk.header.stamp = "world", stamp
            mk.ns, mk.id, mk.type, mk.action = "freeflyer", ident, kind, Marker.ADD
            mk.scale.x, mk.scale.y, mk.scale.z = size
            mk.color.r, mk.color.g, mk.color.b, mk.color.a = rgba
            mk.pose.orientation.w = 1.0
            mk.lifetime = Duration(sec=1)
            return mk

        # Sized to show through the see-through base of rviz/freeflyer.rviz on every bundled
        # robot (bases 0.35-0.8 m): an 8 cm CoM ball, arrows with a 2 cm shaft and 4 cm head.
        com_mk = marker(0, Marker.SPHERE, (1.0, 0.8, 0.0, 1.0), (0.08, 0.08, 0.08))
        com_mk.pose.position = Point(x=float(com[0]), y=float(com[1]), z=float(com[2]))
        markers = [com_mk]
        for ident, vec, rgba in ((1, h[:3], (0.9, 0.2, 0.2, 1.0)), (2, h[3:], (0.2, 0.4, 0.9, 1.0))):
            arrow = marker(ident, Marker.ARROW, rgba, (0.02, 0.04, 0.06))
            tip = com + scale * vec
            arrow.points = [Point(x=float(com[0]), y=float(com[1]), z=float(com[2])),
                            Point(x=float(tip[0]), y=float(tip[1]), z=float(tip[2]))]
            markers.append(arrow)
        return MarkerArray(markers=markers)


def main(args=None) -> None:
    spin_node(GjmNode, args)


if __name__ == "__main__":
    main()
