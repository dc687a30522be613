"""A coding agent as moot's tests play one: the official MCP Python SDK (PyPI `mcp`, pinned in
tests/mcp/requirements.txt) starts `moot mcp` over stdio and walks issue 71's path. It convenes a
moderated debate whose checkpoints the person answers, waits with progress notifications,
lets the person answer from a second process (`moot approve`), reads the decision, and checks
every tool's structured output against its own output schema. It prints what it saw as one
JSON line for the Rust test to judge; any failure is an exception and a non-zero exit.

Usage: agent.py MOOT_BINARY            (starts `moot mcp` over stdio)
       agent.py MOOT_BINARY URL TOKEN  (Streamable HTTP to `moot serve`'s /mcp, with its token)
"""

import asyncio
import json
import os
import subprocess
import sys

import contextlib

import httpx2
import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

QUESTION = "Should we use Redis or PostgreSQL for caching?"
TOOLS = {
    "convene_debate",
    "debate_status",
    "answer_checkpoint",
    "get_decision",
    "list_debates",
    "search_debates",
}


@contextlib.asynccontextmanager
async def transport(moot: str, http: list):
    """`moot mcp` over stdio, or `moot serve`'s /mcp at URL with the bearer TOKEN."""
    if not http:
        params = StdioServerParameters(
            command=moot, args=["mcp"], env=dict(os.environ), cwd=os.getcwd()
        )
        async with stdio_client(params) as streams:
            yield streams
        return
    url, token = http
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=90) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            yield streams


async def walk(moot: str, http: list) -> dict:
    async with transport(moot, http) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=90) as session:
            init = await session.initialize()
            assert init.server_info.name == "moot", init
            listed = await session.list_tools()
            schemas = {}
            for tool in listed.tools:
                jsonschema.Draft202012Validator.check_schema(tool.input_schema)
                assert tool.output_schema, f"{tool.name} has no output schema"
                jsonschema.Draft202012Validator.check_schema(tool.output_schema)
                schemas[tool.name] = tool.output_schema
            assert TOOLS <= set(schemas), sorted(schemas)

            async def call(name: str, arguments: dict, **options):
                result = await session.call_tool(name, arguments, **options)
                assert not result.is_error, (name, result.content)
                jsonschema.validate(result.structured_content, schemas[name])
                return result.structured_content

            convened = await call(
                "convene_debate",
                {"question": QUESTION, "checkpoints": "person", "max_rounds": 2},
            )
            debate = convened["id"]
            assert convened["watch"] == f"moot open {debate}", convened
            progress = []

            async def noted(done, total, message):
                progress.append(message)

            answered = 0
            while True:
                status = await call(
                    "debate_status",
                    {"id": debate, "wait_seconds": 45},
                    progress_callback=noted,
                )
                if status["status"] != "running":
                    break
                assert status["waiting_for"], status
                # The person answers from another terminal.
                subprocess.run([moot, "approve", debate], check=True, capture_output=True)
                answered += 1
                assert answered < 6, status
                # The answer is read by the debate within a second or so; wait for it to move on.
                for _ in range(300):
                    moved = await call("debate_status", {"id": debate})
                    if moved["stage"] != status["stage"] or moved["status"] != "running":
                        break
                    await asyncio.sleep(0.1)
            decision = await call("get_decision", {"id": debate})
            listed_debates = await call("list_debates", {})
            return {
                "id": debate,
                "status": status["status"],
                "answered": answered,
                "progress": progress,
                "record": decision["record"],
                "listed": [d["id"] for d in listed_debates["debates"]],
            }


def main() -> None:
    print(json.dumps(asyncio.run(walk(sys.argv[1], sys.argv[2:]))))


if __name__ == "__main__":
    main()
