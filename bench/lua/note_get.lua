-- GET /notes/{id} for ids picked at random from a file of existing ids (one per line).
-- wrk ... URL -- IDS_FILE [TOKEN]
-- With TOKEN, every request carries `Authorization: Bearer TOKEN` (the server then checks the
-- token and takes from its rate limit buckets).
-- The requests are formatted once in init(), so wrk spends its time sending, not building.
local requests = {}

function init(args)
    local path = assert(args[1], "usage: wrk -s note_get.lua URL -- IDS_FILE [TOKEN]")
    local headers = args[2] and { Authorization = "Bearer " .. args[2] } or nil
    for id in io.lines(path) do
        if id ~= "" then
            requests[#requests + 1] = wrk.format("GET", "/notes/" .. id, headers)
        end
    end
    assert(#requests > 0, "no ids in " .. path)
    math.randomseed(os.time())
end

function request()
    return requests[math.random(#requests)]
end
