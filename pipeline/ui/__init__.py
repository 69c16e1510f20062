"""`persona ui`: a local page to see and change what every agent knows.

Needs the optional extra ``ui`` (Starlette and uvicorn; ``make install`` has it). Nothing outside this
package imports them, so the rest of persona-tier starts without them. Every action calls the same store
and schedule functions as the CLI, so a refusal reads the same in both.
"""
