"""Load generator of bench/rate_limit.sh: offers calls of one token to several
gateways at a fixed total rate for a fixed time, then compares the calls the
shared rate limit admitted with what a GCRA of that limit should admit.

Usage: python3 rate_limit_run.py TOKEN LIMIT_PER_MINUTE SECONDS RATE URL [URL ...]
   or: python3 rate_limit_run.py --wrk-results LIMIT_PER_MINUTE FILE [FILE ...]
       (the same report from wrk runs of bench/rate_limit.lua)

One process per gateway URL, each running asyncio over keep-alive HTTP/1.1
connections (stdlib only). Each connection paces its own calls so that the
total offered is RATE calls a second; a connection that falls behind sends at
once, so the figure printed as "offered" is what was really sent.
"""

import asyncio
import multiprocessing
import os
import sys
import time

PATH = "/api/v1/providers"
# Keep-alive connections to each gateway (RATE_BENCH_CONNECTIONS overrides).
CONNECTIONS_PER_GATEWAY = int(os.environ.get("RATE_BENCH_CONNECTIONS", "32"))


async def connection(host, port, token, start, interval, stop_at, counts, times):
    reader, writer = await asyncio.open_connection(host, port)
    request = (
        f"GET {PATH} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {token}\r\n\r\n"
    ).encode()
    due = start
    while True:
        now = time.time()
        if now >= stop_at:
            break
        if due > now:
            await asyncio.sleep(due - now)
        due += interval
        sent = time.time()
        if sent >= stop_at:
            break
        writer.write(request)
        await writer.drain()
        status_line = await reader.readline()
        status = int(status_line.split()[1])
        length = 0
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length:
            await reader.readexactly(length)
        counts[status] = counts.get(status, 0) + 1
        times.append(sent)
    writer.close()


async def gateway_load(url, token, start, rate, stop_at):
    host, port = url.removeprefix("http://").rsplit(":", 1)
    interval = CONNECTIONS_PER_GATEWAY / rate
    counts, times = {}, []
    # Connections start staggered across one interval, so calls are spread
    # evenly instead of leaving in bursts.
    await asyncio.gather(
        *(
            connection(
                host,
                int(port),
                token,
                start + i * interval / CONNECTIONS_PER_GATEWAY,
                interval,
                stop_at,
                counts,
                times,
            )
            for i in range(CONNECTIONS_PER_GATEWAY)
        )
    )
    return counts, min(times), max(times)


def worker(url, token, start, rate, stop_at, out):
    out.put((url, asyncio.run(gateway_load(url, token, start, rate, stop_at))))


def main():
    if sys.argv[1] == "--wrk-results":
        wrk_results(int(sys.argv[2]), sys.argv[3:])
        return
    token, limit, seconds, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    urls = sys.argv[5:]
    start = time.time() + 1.0
    stop_at = start + seconds
    out = multiprocessing.Queue()
    procs = [
        multiprocessing.Process(
            target=worker, args=(url, token, start, rate / len(urls), stop_at, out)
        )
        for url in urls
    ]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()

    first = min(r[1][1] for r in results)
    last = max(r[1][2] for r in results)
    report(limit, last - first, "first to last call sent", sorted((url, counts) for url, (counts, _, _) in results))


def report(limit, window, window_is, per_gateway):
    """Prints the calls by status per gateway and in all, and compares the
    calls admitted over `window` seconds with what a GCRA of `limit` a
    minute admits."""
    total = {}
    for name, counts in per_gateway:
        for status, n in counts.items():
            total[status] = total.get(status, 0) + n
        print(f"{name}: " + ", ".join(f"{s}: {n}" for s, n in sorted(counts.items(), key=lambda kv: str(kv[0]))))
    sent = sum(total.values())
    admitted = total.get(200, 0)
    other = {s: n for s, n in total.items() if s not in (200, 429)}
    # GCRA: the burst (one minute's worth) at once, then one call per 60 s / limit.
    expected = limit * window / 60 + limit
    beyond_burst = limit * window / 60
    print(f"limit {limit}/min, window {window:.2f} s ({window_is})")
    print(f"offered {sent} calls, {sent / window:.0f} a second")
    print(f"admitted {admitted}, refused (429) {total.get(429, 0)}, other {other or 'none'}")
    print(
        f"expected {expected:.0f} (limit x window / 60 + burst): "
        f"relative error {100 * (admitted - expected) / expected:+.2f} %"
    )
    print(
        f"beyond the burst: admitted {admitted - limit}, expected {beyond_burst:.0f}: "
        f"relative error {100 * (admitted - limit - beyond_burst) / beyond_burst:+.2f} %"
    )


def wrk_results(limit, paths):
    """The report of wrk runs (bench/rate_limit.lua's RESULT lines), the
    window being the longer run."""
    runs = []
    for path in paths:
        line = next(l for l in open(path) if l.startswith("RESULT"))
        admitted, limited, other, micros = (int(x) for x in line.split()[1:])
        counts = {200: admitted, 429: limited}
        if other:
            counts["other"] = other
        runs.append((path.rsplit("/", 1)[-1], counts, micros / 1e6))
    window = max(r[2] for r in runs)
    report(limit, window, "the longer wrk run", [(name, counts) for name, counts, _ in runs])


if __name__ == "__main__":
    main()
