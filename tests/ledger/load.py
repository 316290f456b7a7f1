"""Many concurrent randomized calls against a gateway, for the cap tests."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass, field

import httpx


@dataclass
class LoadResult:
    statuses: Counter[int] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    ok_by_key: Counter[str] = field(default_factory=Counter)


async def _one(
    client: httpx.AsyncClient, url: str, secret: str, rng: random.Random, res: LoadResult
) -> None:
    words = " ".join(
        rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(rng.randint(1, 40))
    )
    body: dict[str, object] = {
        "model": "x",
        "messages": [{"role": "user", "content": words}],
        "max_tokens": rng.randint(1, 80),
    }
    stream = rng.random() < 0.3
    if stream:
        body["stream"] = True
    headers = {"Authorization": f"Bearer {secret}"}
    if stream:
        async with client.stream("POST", url, json=body, headers=headers) as resp:
            content = await resp.aread()
            status = resp.status_code
    else:
        resp = await client.post(url, json=body, headers=headers)
        content, status = resp.content, resp.status_code
    res.statuses[status] += 1
    if status == 200:
        res.ok_by_key[secret] += 1
    else:
        res.codes[httpx.Response(status, content=content).json()["error"]["code"]] += 1


async def hammer(
    url: str, secrets: list[str], *, calls: int, concurrency: int, seed: int, uds: str | None = None
) -> LoadResult:
    rng = random.Random(seed)
    res = LoadResult()
    plan = [rng.choice(secrets) for _ in range(calls)]
    sem = asyncio.Semaphore(concurrency)
    transport = httpx.AsyncHTTPTransport(uds=uds) if uds else None
    async with httpx.AsyncClient(timeout=60, transport=transport) as client:

        async def run(secret: str, sub_seed: int) -> None:
            async with sem:
                await _one(client, url, secret, random.Random(sub_seed), res)

        await asyncio.gather(*(run(s, rng.randint(0, 10**9)) for s in plan))
    return res
