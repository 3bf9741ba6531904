# Loop Stepper for a classroom: one container, one server process, every student's session in it.
#   docker build -t loop-stepper .
#   docker run -d --name loop-stepper -p 8000:8000 -v loop-stepper-data:/data loop-stepper
#   (students open http://<host>:8000; the volume keeps every session across restarts)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# Layer 1, the big one: torch alone, the CPU build (never the multi-GB CUDA one). It changes only
# when the pin does. The build stops if a CUDA build slipped in anyway. Where a local wheel
# folder or mirror already holds the CPU build, `--build-arg TORCH_INDEX_URL=` skips the index.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} torch==2.13.0 \
 && python -c "import sys, torch; sys.exit('refusing a CUDA build of torch' if torch.version.cuda else 0)"

WORKDIR /srv/loop-stepper

# Layer 2: the other dependencies, read from pyproject.toml (the base and the server extra), at the versions in requirements.lock
# (which pins torch's own dependencies too: any that layer 1 brought at other versions are set to
# the lock's). The code is not copied yet, so editing it does not re-install anything.
COPY pyproject.toml requirements.lock ./
RUN python -c "import tomllib; d = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print('\n'.join(d['dependencies'] + d['optional-dependencies']['server']))" >/tmp/requirements.txt \
 && pip install -r /tmp/requirements.txt -c requirements.lock && rm /tmp/requirements.txt

# Layer 3: the code: the server (app) and the library it draws the stores with (loop_stepper).
# app/settings.py finds templates/ and static/ beside app/.
COPY loop_stepper ./loop_stepper
COPY app ./app
COPY templates ./templates
COPY static ./static

RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin loopstepper \
 && mkdir /data && chown 10001 /data
USER 10001
# Every session's log (SQLite, sessions.sqlite3): mount a volume here so sessions survive the
# container, e.g. `docker run -v loop-stepper-data:/data ...`.
VOLUME /data

# Settings are environment variables (LOOP_STEPPER_*): see docs/deploy.md's Settings table.
# MALLOC_ARENA_MAX: glibc's per-thread arenas let RSS creep as sessions come and go; 2 keeps it flat.
ENV PYTHONPATH=/srv/loop-stepper LOOP_STEPPER_HOST=0.0.0.0 LOOP_STEPPER_PORT=8000 MALLOC_ARENA_MAX=2 \
    LOOP_STEPPER_DATA=/data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('LOOP_STEPPER_PORT', '8000') + '/healthz', timeout=4)"
CMD ["python", "-m", "app.cli"]
