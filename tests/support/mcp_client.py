"""Drives cronstable's MCP server with the official MCP Python SDK (the
`mcp` package from PyPI), as an AI client would: over Streamable HTTP
(`http URL TOKEN JOB`) or through the `cronstable mcp` stdio bridge
(`stdio BINARY URL TOKEN JOB`). It initializes, lists the tools, lists
the jobs, runs JOB and waits for its run to be recorded, asks why the
schedule did not fire at a time, reads a resource and gets a prompt, then
prints what it saw as one JSON object on stdout (the Rust test judges
it). Any protocol failure raises, so the process exits non-zero.

`modern-http URL TOKEN JOB` and `modern-stdio BINARY URL TOKEN JOB` do
the same through the SDK's high-level `Client` in its default `auto`
mode, which probes `server/discover` and speaks the stateless revision
2026-07-28 when the server answers it (no initialize).
"""

import json
import sys
import time

import anyio
import httpx2
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def data(result):
    """A tool result's structured content (the SDK checked it against the
    tool's outputSchema, where one is declared)."""
    if result.is_error:
        raise RuntimeError("tool error: {}".format(result.content[0].text))
    return result.structured_content


async def calls(api, job):
    """The same calls through either a ClientSession (after its handshake)
    or a connected high-level Client: both offer these methods."""
    tools = await api.list_tools()
    listed = data(await api.call_tool("cron_list_jobs", {"limit": 50}))
    before = data(await api.call_tool("cron_list_runs", {"name": job}))["totalRuns"]
    started = data(await api.call_tool("cron_run_job", {"name": job, "confirm": True}))
    runs = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        runs = data(await api.call_tool("cron_list_runs", {"name": job}))
        if runs["totalRuns"] > before:
            break
        await anyio.sleep(0.2)
    logs = data(await api.call_tool("cron_tail_job_logs", {"name": job}))
    why = await api.call_tool(
        "cron_why_no_run", {"name": job, "at": "2026-01-01T10:03:00"}
    )
    resources = await api.list_resources()
    version = await api.read_resource("cronstable://version")
    prompts = await api.list_prompts()
    prompt = await api.get_prompt("triage_job_failure", {"job": job})
    return {
        "tools": [t.name for t in tools.tools],
        "jobs": [j["name"] for j in listed["jobs"]],
        "started": started,
        "runs_before": before,
        "last_run": runs["runs"][-1] if runs and runs["runs"] else None,
        "log_lines": [line["line"] for line in logs["lines"]],
        "why_summary": why.content[0].text,
        "why": why.structured_content,
        "resources": [str(r.uri) for r in resources.resources],
        "version": json.loads(version.contents[0].text),
        "prompts": [p.name for p in prompts.prompts],
        "prompt": prompt.messages[0].content.text,
    }


async def exercise(session, job):
    """The handshake era: initialize, then the calls."""
    init = await session.initialize()
    seen = {"protocol": init.protocol_version, "server": init.server_info.name}
    seen.update(await calls(session, job))
    return seen


async def over_http(url, token, job):
    headers = {"Authorization": "Bearer " + token}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(
            url, http_client=http, terminate_on_close=False
        ) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                return await exercise(session, job)


async def over_stdio(binary, url, token, job):
    server = StdioServerParameters(
        command=binary,
        args=["mcp", "--url", url, "--token-env", "TEST_MCP_TOKEN"],
        env={"TEST_MCP_TOKEN": token},
    )
    async with stdio_client(server) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            return await exercise(session, job)


async def exercise_modern(client, job):
    """The calls through a connected high-level Client (no handshake of
    its own: the connection already discovered the server)."""
    info = client.server_info
    seen = {
        "protocol": client.protocol_version,
        "server": info.name if info is not None else None,
    }
    seen.update(await calls(client, job))
    return seen


async def modern_over_http(url, token, job):
    headers = {"Authorization": "Bearer " + token}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(
            url, http_client=http, terminate_on_close=False
        )
        async with Client(transport, raise_exceptions=True) as client:
            return await exercise_modern(client, job)


async def modern_over_stdio(binary, url, token, job):
    server = StdioServerParameters(
        command=binary,
        args=["mcp", "--url", url, "--token-env", "TEST_MCP_TOKEN"],
        env={"TEST_MCP_TOKEN": token},
    )
    async with Client(server, raise_exceptions=True) as client:
        return await exercise_modern(client, job)


def main(argv):
    if argv[1] == "http":
        seen = anyio.run(over_http, argv[2], argv[3], argv[4])
    elif argv[1] == "stdio":
        seen = anyio.run(over_stdio, argv[2], argv[3], argv[4], argv[5])
    elif argv[1] == "modern-http":
        seen = anyio.run(modern_over_http, argv[2], argv[3], argv[4])
    else:
        seen = anyio.run(modern_over_stdio, argv[2], argv[3], argv[4], argv[5])
    print(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv)
