# flake: time-ordered 64-bit keys for PostgreSQL
#
#   make demo   build, install and show flake on a throwaway cluster
#   make test   build, install and run the whole suite
#   make bench  benchmarks (test/bench; MAJOR=18 in that major's chroot)
#   make bench-migrate  flake_migrate() on 1M + 1M rows (test/bench/migrate)
#   make matrix the suite on every PostgreSQL major, in Debian chroots
#               (MAJORS="17 18" for some; see test/matrix)
#   make indent lay out the C sources as PostgreSQL's pgindent does
#               (make check-indent: fail where they are not; test/indent)

EXTENSION = flake
MODULE_big = flake
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
HEADERS = $(wildcard src/*.h)
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" flake.control)

# Install scripts: released versions are kept as they shipped; the current
# version's script and the upgrade scripts are built from sql/parts, so the
# migration functions live in one file (every upgrade replaces them whole).
UPGRADES = $(patsubst sql/parts/upgrade--%.sql,sql/flake--%.sql,$(wildcard sql/parts/upgrade--*.sql))
DATA = $(filter-out sql/flake--$(EXTVERSION).sql $(UPGRADES),$(wildcard sql/flake--*.sql))
DATA_built = sql/flake--$(EXTVERSION).sql $(UPGRADES)
PGFILEDESC = "flake - time-ordered 64-bit keys"

# -Wextra with PostgreSQL's fmgr convention: every PG_FUNCTION_ARGS function
# takes fcinfo, used or not.
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter

# Builds for the suite, all off by default: FLAKE_WERROR=1 makes warnings
# errors (CI), FLAKE_ASSERT=1 turns on PostgreSQL's Assert() in our code,
# and FLAKE_PORTABLE=1 takes the code paths of CPUs other than x86-64 (the
# clock without the time-stamp counter, the Randflake batch without SSE2,
# the log filter's scan without AVX2) so that they are compiled and tested here too.  .flake-build-flags
# remembers the last set, so that a change rebuilds everything.
FLAKE_BUILD_FLAGS = $(strip $(if $(filter 1,$(FLAKE_WERROR)),-Werror) \
	$(if $(filter 1,$(FLAKE_ASSERT)),-DUSE_ASSERT_CHECKING) \
	$(if $(filter 1,$(FLAKE_PORTABLE)),-DFLAKE_PORTABLE))
PG_CPPFLAGS += $(FLAKE_BUILD_FLAGS)

# SQL behaviour, against a temporary instance with flake preloaded
TEST_CONF = --temp-config=test/flake.conf --encoding=UTF8 --no-locale
REGRESS = $(filter-out flake--%,$(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql))))
REGRESS_OPTS = --temp-instance=tmp_check_regress $(TEST_CONF)
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(sort $(wildcard test/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test/isolation --temp-instance=tmp_check_isolation $(TEST_CONF)
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl
EXTRA_CLEAN = tmp_check_regress tmp_check_isolation results output_iso \
	test/isolation/results test/isolation/output_iso regression.* test/unit/*.bin \
	.flake-build-flags

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild everything when one changes,
# or when the build flags do.
$(OBJS) $(OBJS:.o=.bc): $(HEADERS) .flake-build-flags
.flake-build-flags: FORCE
	@echo '$(FLAKE_BUILD_FLAGS)' | cmp -s - $@ || echo '$(FLAKE_BUILD_FLAGS)' > $@
FORCE:

# The suite in parts; test/run calls them as an unprivileged user.
check-regress:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)
check-isolation:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)
check-tap:
	$(prove_installcheck)
check-structure: all
	test/check-structure

test:
	test/run

demo:
	test/demo

matrix:
	test/matrix

bench:
	test/bench/run

bench-migrate:
	test/bench/migrate

sql/flake--$(EXTVERSION).sql: sql/parts/flake.sql sql/parts/migrate.sql
	{ echo '/* $(notdir $@), built by make from $^ */'; \
	  printf '%s\n' '\echo Use "CREATE EXTENSION flake" to load this file. \quit'; \
	  cat $^; } > $@

$(UPGRADES): sql/flake--%.sql: sql/parts/upgrade--%.sql sql/parts/migrate.sql
	{ echo '/* $(notdir $@), built by make from $^ */'; \
	  printf '%s\n' '\echo Use "ALTER EXTENSION flake UPDATE" to load this file. \quit'; \
	  cat $^; } > $@

.PHONY: check-regress check-isolation check-tap check-unit check-structure check-indent indent test matrix demo bench bench-migrate FORCE

# C unit tests of the plain-C parts, against the vectors in test/data
UNIT_TESTS = test/unit/test_randflake test/unit/test_keyscan
test/unit/test_randflake.bin: test/unit/test_randflake.c src/sparx.c src/sparx.h src/randflake.h .flake-build-flags
	$(CC) -Wall -Wextra -O2 $(FLAKE_BUILD_FLAGS) -Isrc -o $@ test/unit/test_randflake.c src/sparx.c
test/unit/test_keyscan.bin: test/unit/test_keyscan.c test/unit/keyscan_reference.h src/keyscan.c src/keyscan.h .flake-build-flags
	$(CC) -Wall -Wextra -O2 $(FLAKE_BUILD_FLAGS) -Isrc -o $@ test/unit/test_keyscan.c src/keyscan.c
check-unit: $(UNIT_TESTS:=.bin)
	@for t in $^; do ./$$t test/data || exit 1; done

# pgindent's layout (Debian's pg_bsd_indent), with the typedefs read from
# the debug information of the objects built here
INDENT_FILES = $(sort $(wildcard src/*.c src/*.h test/unit/*.c test/fuzz/*.c))
indent: $(OBJS)
	test/indent $(OBJS) -- $(INDENT_FILES)
check-indent: $(OBJS)
	test/indent --check $(OBJS) -- $(INDENT_FILES)
