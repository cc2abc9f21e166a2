"""One denoising step of a small diffusion policy (DDPM) over an action horizon.

The noise predictor embeds the diffusion timestep sinusoidally, conditions on the
observation through an MLP (FiLM scale and shift), and runs two 1-D convolutions over
the action horizon. The DDPM update then computes ``x_{t-1}`` from ``x_t``, the predicted
noise and fresh noise ``z``, with the schedule looked up at each sample's timestep.
"""

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

BATCH, HORIZON, ACTION, OBS = 4, 16, 7, 20
CHANNELS, EMBED, STEPS = 32, 16, 100

BETAS = np.linspace(1e-4, 0.02, STEPS, dtype=np.float32)
ALPHAS = 1.0 - BETAS
ALPHA_BARS = np.cumprod(ALPHAS).astype(np.float32)


def timestep_embedding(t, dim):
    """Sinusoidal embedding of integer timesteps ``t`` [B] -> [B, dim]."""
    half = dim // 2
    freqs = jnp.exp(-np.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)
    args = t.astype(jnp.float32)[:, None] * freqs[None, :]
    return jnp.concatenate([jnp.sin(args), jnp.cos(args)], axis=-1)


class NoisePredictor(nn.Module):
    @nn.compact
    def __call__(self, x, obs, t):
        cond = jnp.concatenate([timestep_embedding(t, EMBED), obs], axis=-1)
        cond = nn.Dense(2 * CHANNELS)(nn.swish(nn.Dense(64)(cond)))
        scale, shift = jnp.split(cond, 2, axis=-1)
        h = nn.Conv(CHANNELS, (5,), padding="SAME")(x)  # [B, H, C]
        h = nn.swish(h * (1.0 + scale[:, None, :]) + shift[:, None, :])
        h = nn.swish(nn.Conv(CHANNELS, (3,), padding="SAME")(h))
        return nn.Dense(ACTION)(h)


class Model(nn.Module):
    @nn.compact
    def __call__(self, x, obs, t, z):
        eps = NoisePredictor()(x, obs, t)
        beta = jnp.asarray(BETAS)[t][:, None, None]
        alpha = jnp.asarray(ALPHAS)[t][:, None, None]
        alpha_bar = jnp.asarray(ALPHA_BARS)[t][:, None, None]
        mean = (x - beta / jnp.sqrt(1.0 - alpha_bar) * eps) / jnp.sqrt(alpha)
        sigma = jnp.sqrt(beta)
        return mean + jnp.where((t > 0)[:, None, None], sigma * z, 0.0)


def get_inputs():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, HORIZON, ACTION), dtype=np.float32)
    obs = rng.standard_normal((BATCH, OBS), dtype=np.float32)
    t = np.array([0, 10, 50, 99], dtype=np.int32)
    z = rng.standard_normal((BATCH, HORIZON, ACTION), dtype=np.float32)
    return [x, obs, t, z]
