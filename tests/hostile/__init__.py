"""Hostile inputs and faults (issue 15): each case bounded in time and memory."""
