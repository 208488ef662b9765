"""The pure core: roadmap parsing, lint, the ladder, texts, phrases, report building, times.

No I/O, no clock, no environment: values in, values out. Nothing here imports the shell.
"""
