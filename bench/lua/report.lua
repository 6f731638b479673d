-- report.lua: appended to every generated wrk script by bench/run. At the
-- end of a run wrk calls done(); this prints one machine-readable line with
-- the request count, the error counts and the latency distribution (us).
-- wrk 4.1's histogram can come back empty above some percentile when
-- requests are pipelined (it records one sample per batch): such a
-- percentile is printed as -1, "unknown", rather than as 0.
local function pct(latency, p)
   local v = latency:percentile(p)
   if v == 0 and latency.max > 0 then
      return -1
   end
   return v
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH_RESULT requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d " ..
      "status=%d timeout=%d p50=%d p90=%d p99=%d p999=%d max=%d mean=%.1f\n",
      summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
      e.status, e.timeout, pct(latency, 50), pct(latency, 90),
      pct(latency, 99), pct(latency, 99.9), latency.max, latency.mean))
end
