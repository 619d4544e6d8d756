"""Episode capture for any ``gymnasium.Env``."""

from onrecord.integrations.gymnasium._capture import capture_episode

__all__ = ["capture_episode"]
