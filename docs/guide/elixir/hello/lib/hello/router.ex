defmodule Hello.Router do
  # Handlers are modules, {module, state} or remote captures
  # (&Module.fun/1): those pick up new code on a hot upgrade.
  def routes do
    [
      {"/", &Hello.Router.index/1, %{methods: ["GET"]}},
      {"/users/:id", {Hello.UserHandler, %{}}, %{methods: ["GET"]}},
      {"/echo", &Hello.Router.echo/1, %{methods: ["POST"]}},
      {"/ws", &Hello.EchoSocket.upgrade/1, %{methods: ["GET"]}}
    ]
  end

  def index(_req) do
    :falco_resp.text(200, "Hello from Elixir!\n")
  end

  # JSON in, JSON out: null decodes as nil (null: nil), nil encodes as null.
  def echo(req) do
    {:ok, body, _req} = :falco_req.read_body(req)

    case :falco_json.decode(body, %{null: nil}) do
      {:ok, %{"name" => name} = doc} ->
        :falco_resp.json(200, %{"got" => doc, "name_is_nil" => is_nil(name)})

      {:ok, _other} ->
        :falco_resp.json(422, %{"error" => "expected an object with a name"})

      {:error, reason} ->
        :falco_resp.text(400, "bad JSON: #{inspect(reason)}\n")
    end
  end
end
