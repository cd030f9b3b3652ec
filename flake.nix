{
  # flashqla: Gated DeltaNet kernels for NVIDIA Hopper (sm_90a), written in TileLang and compiled
  # ahead of time into C-ABI shared libraries (see build.toml for the full story).
  #
  # This flake describes the real build. It does NOT use kernel-builder's genKernelFlakeOutputs:
  # kernel-builder compiles CUDA/C++ sources listed in [kernel.*] sections of build.toml, and
  # flashqla has none. Its kernels are TileLang programs lowered by tilelang 0.1.15 (a PyPI wheel
  # that bundles its own TVM; it is not packaged in nixpkgs) and compiled by nvcc for sm_90a,
  # which `python -m flashqla_kernels.build` does. So the flake provides:
  #
  #   nix develop           a shell with Python 3.11, nvcc 13.0 and the CUDA headers (no GPU
  #                         needed); on entry it creates .venv-nix and installs the pinned Python
  #                         packages (torch 2.13 CPU wheel, tilelang 0.1.15, kernels 0.17.2, ...).
  #   nix run .#build       the AOT build: python -m flashqla_kernels.build -> build/torch-cuda,
  #                         build/torch-cpu (the hub-kernel layout).
  #   nix run .#ci          .ci/run: build + CPU tests, as in CI.
  #
  # pip needs the network, so these are impure by design (like .ci/run); nothing here pretends to
  # be a hermetic nix build of the binaries.
  description = "flashqla: Gated DeltaNet kernels for Hopper (sm_90a), TileLang compiled ahead of time";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
  };

  outputs =
    { self, nixpkgs }:
    let
      system = "x86_64-linux";
      pkgs = import nixpkgs {
        inherit system;
        config.allowUnfree = true; # the CUDA toolkit is unfree
      };
      cuda = pkgs.cudaPackages_13_0;
      python = pkgs.python311;

      # nvcc + headers + static cudart: all the build needs (sm_90a code is produced without a GPU).
      cudaToolkit = pkgs.symlinkJoin {
        name = "flashqla-cuda-13.0";
        paths = [
          cuda.cuda_nvcc
          cuda.cuda_cudart
          (pkgs.lib.getDev cuda.cuda_cudart) # cuda_runtime.h
          (pkgs.lib.getOutput "static" cuda.cuda_cudart) # libcudart_static.a (nvcc -cudart static)
          cuda.cuda_cccl
        ];
      };

      buildInputs = [
        python
        cudaToolkit
        pkgs.git
        pkgs.gcc
        pkgs.stdenv.cc.cc.lib # libstdc++ for the tilelang / torch wheels
        pkgs.zlib
      ];

      env = ''
        export CUDA_HOME=${cudaToolkit}
        export CUDA_PATH=${cudaToolkit}
        export PATH=${cudaToolkit}/bin:$PATH
        export LD_LIBRARY_PATH=${pkgs.stdenv.cc.cc.lib}/lib:${pkgs.zlib}/lib''${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      '';

      # Same pins as .ci/run and README.md.
      venv = ''
        if [ ! -x .venv-nix/bin/python ]; then
          ${python}/bin/python -m venv .venv-nix
          printf '*\n' > .venv-nix/.gitignore
          .venv-nix/bin/pip install -q --upgrade pip
          .venv-nix/bin/pip install -q "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
          .venv-nix/bin/pip install -q "tilelang==0.1.15" "kernels==0.17.2" "transformers==5.22.2" \
            safetensors accelerate pytest
          .venv-nix/bin/pip install -q --no-deps -e .
        fi
        # shellcheck disable=SC1091
        source .venv-nix/bin/activate
      '';

      script =
        name: withVenv: body:
        pkgs.writeShellApplication {
          inherit name;
          runtimeInputs = buildInputs;
          text = env + (if withVenv then venv else "") + body;
        };
    in
    {
      devShells.${system}.default = pkgs.mkShell {
        packages = buildInputs;
        shellHook = env + venv;
      };

      apps.${system} = {
        build = {
          type = "app";
          program = "${script "flashqla-build" true "python -m flashqla_kernels.build \"$@\""}/bin/flashqla-build";
        };
        ci = {
          type = "app";
          program = "${script "flashqla-ci" false "bash .ci/run"}/bin/flashqla-ci";
        };
      };
    };
}
