defmodule Hello.UserHandler do
  @behaviour :falco_handler

  @impl true
  def handle(req, _state) do
    # The binding by its name as a string ("id") or an atom (:id).
    id = :falco_req.binding("id", req)
    # A header that is not there is :undefined (Erlang's), not nil.
    agent = :falco_req.header("user-agent", req, nil)
    email = if id == "1", do: "joe@example.com", else: nil
    :falco_resp.json(200, %{"id" => id, "email" => email, "agent" => agent})
  end
end
