"""Episode capture for any ``gymnasium.Env``."""

from onrecord.integrations.gymnasium._capture import capture_episode, capture_episode_async
from onrecord.integrations.gymnasium._spaces import decode_sample

__all__ = ["capture_episode", "capture_episode_async", "decode_sample"]
