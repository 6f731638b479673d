-- pipelined.lua: sends 16 requests for bench_path in one write; wrk counts
-- each response (and times it from the write of its batch).
local depth = 16
local batch

function init(args)
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format(nil, bench_path)
   end
   batch = table.concat(r)
end

function request()
   return batch
end
