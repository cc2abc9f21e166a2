"""MuJoCo MJX: `jax.vmap` of a `lax.scan` over `mjx.step`, double pendulums from an XML string."""
from __future__ import annotations

import jax
import mujoco
from mujoco import mjx

WORLDS = 4
STEPS = 4

XML = """
<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1"/>
      <body name="lower" pos="0 0 -0.5">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

_MODEL = mjx.put_model(mujoco.MjModel.from_xml_string(XML))


def f(qpos):
    def rollout(q):
        data = mjx.make_data(_MODEL).replace(qpos=q)

        def step(d, _):
            d = mjx.step(_MODEL, d)
            return d, d.qpos

        _, traj = jax.lax.scan(step, data, None, length=STEPS)
        return traj

    return jax.vmap(rollout)(qpos)


def get_inputs():
    return [jax.random.uniform(jax.random.PRNGKey(0), (WORLDS, 2), minval=-1.0, maxval=1.0)]
