"""Synthetic worlds shared by the studies: the ray caster (rooms, people, objects, dynamic events;
RGB, depth and instance masks) and the 360-degree world built on it."""
