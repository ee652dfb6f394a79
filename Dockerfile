# ContextCorruption reward server: serves a dataset published on the Hugging Face Hub (HF Space style).
#
#   docker build -t contextcorruption-api .
#   docker run -p 7860:7860 -e CONTEXTCORRUPTION_DATA=org/name -e CONTEXTCORRUPTION_REVISION=v1 \
#              -e CONTEXTCORRUPTION_STATE_KEY=<secret shared by all replicas> contextcorruption-api
#
# A local build can be mounted read-only instead of downloaded:
#   docker run -p 7860:7860 -v "$PWD/data/episodes:/data:ro" -e CONTEXTCORRUPTION_DATA=/data contextcorruption-api
#
# On a Space, set CONTEXTCORRUPTION_DATA / _REVISION as variables and CONTEXTCORRUPTION_STATE_KEY as a secret.
# Only the serving dependencies are installed (requirements-serve.txt): no torch, trl, transformers or dvc.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Spaces run containers as uid 1000; the code below stays owned by root, so the server cannot change it.
RUN useradd --create-home --uid 1000 app

WORKDIR /srv
COPY requirements-serve.txt .
RUN pip install --no-cache-dir -r requirements-serve.txt \
    && pip install --no-cache-dir --no-deps openenv==0.10.0

COPY pipeline/__init__.py pipeline/atomic.py pipeline/schema.py pipeline/randomness.py pipeline/checksums.py pipeline/heap.py \
    pipeline/problems.py pipeline/console.py pipeline/
COPY reward_api/ reward_api/

USER 1000:1000
# A Hub dataset is downloaded once at start-up into the user's Hub cache and only ever read; without
# CONTEXTCORRUPTION_DATA the server expects a folder mounted at /data. Set CONTEXTCORRUPTION_REVISION only
# with a repo id. A build with a hidden test split scores it only with its answers: set CONTEXTCORRUPTION_ANSWERS
# to the private answers repo id, pinned with CONTEXTCORRUPTION_ANSWERS_REVISION to the dataset's tag (HF_TOKEN as
# a Space secret), or to a mounted folder. The /episodes views cache is
# written under ~/.cache.
ENV HF_HOME=/home/app/.cache/huggingface \
    CONTEXTCORRUPTION_DATA=/data \
    CONTEXTCORRUPTION_HOST=0.0.0.0 \
    CONTEXTCORRUPTION_PORT=7860

EXPOSE 7860
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; port = os.environ.get('CONTEXTCORRUPTION_PORT', '7860'); urllib.request.urlopen(f'http://127.0.0.1:{port}/health', timeout=4)"]

CMD ["python", "-m", "reward_api"]
