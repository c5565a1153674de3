# Two entry points (README): `make demo` and `make test`. Both install what they need first.
BUILD ?= build
RUN ?= examples/runs/bloom560m.kjdb
KJ = $(BUILD)/kjoule

.PHONY: deps build demo test clean

deps:
	./scripts/install-deps.sh

# Developer and CI builds treat warnings as errors (KJ_WERROR); a plain `cmake` build does not.
build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKJ_WERROR=ON >/dev/null
	cmake --build $(BUILD) -j$$(nproc)

# The main job: trace+replay+compare on a GPU; on a machine without one, the analysis of the
# real example run shipped in the repo.
demo: build
	./scripts/demo.sh $(KJ) $(RUN)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$$(nproc)

clean:
	rm -rf $(BUILD)
