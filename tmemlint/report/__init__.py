"""Reporters: findings → text for people and formats for tools."""
