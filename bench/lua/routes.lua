-- routes.lua: GET /route/1 .. /route/100 in turn (varied_paths_router).
local reqs = {}
local i = 0

function init(args)
   for n = 1, 100 do
      reqs[n] = wrk.format(nil, "/route/" .. n)
   end
end

function request()
   i = i % 100 + 1
   return reqs[i]
end
