defmodule Hello.MixProject do
  use Mix.Project

  def project do
    [app: :hello, version: "0.1.0", elixir: "~> 1.14", deps: deps()]
  end

  # falco is started before :hello (Mix starts an application's deps first).
  def application do
    [extra_applications: [:logger], mod: {Hello.Application, []}]
  end

  # A path (or git) dependency; falco's test of this guide points
  # FALCO_PATH at its checkout.
  defp deps do
    [{:falco, path: System.get_env("FALCO_PATH", "../falco")}]
  end
end
