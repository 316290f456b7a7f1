"""``/api/batches``: start a batch of realms of one library scenario, and read it.

The API's batch runs its realms where the API's realms run (the Celery workers, or the
``pit_serve`` process, which provisions and ticks them). The batch itself moves on in
the background, by the server's batch driver (``pit_serve``) or Celery beat's
``batches.advance_all``: it queues the runs that now have room and, once every run has
ended, writes the report. A ``GET`` moves it on too, so a read is never behind; a
restarted server loses nothing, since the row lists every run's realm.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from realms.api.common import not_found, refusal
from realms.api.fields import ScalarField, StrictCharField, StrictSerializer, parse, parse_query
from realms.api.serializers import EmptyRequest, Error, Problems
from realms.batch.report import summary
from realms.batch.service import (
    MAX_RUNS,
    BatchError,
    LibraryBatch,
    advance_batch,
    progress,
    start_library_batch,
)
from realms.models import Batch, Realm
from realms.services.queue import LaunchError, QueueRefused

BATCH_ID = re.compile(r"batch-[a-z0-9-]{1,74}")


class BatchStart(StrictSerializer):
    package = StrictCharField(help_text="the name of a scenario in the library")
    n = serializers.IntegerField(min_value=1, max_value=MAX_RUNS, help_text="number of runs")
    concurrency = serializers.IntegerField(min_value=1, required=False, default=1)
    parameters = serializers.DictField(child=ScalarField(), required=False, default=dict)
    grid = serializers.DictField(
        child=serializers.ListField(child=ScalarField(), allow_empty=False),
        required=False,
        default=dict,
        help_text="NAME: [values]; the runs cycle through every combination",
    )
    intended = serializers.ListField(
        child=StrictCharField(), required=False, allow_empty=False, default=None
    )
    provider = StrictCharField(required=False, allow_blank=True, default="")


class BatchRun(serializers.Serializer):  # type: ignore[type-arg]
    index = serializers.IntegerField()
    parameters = serializers.DictField(child=serializers.CharField())
    realm_id = serializers.CharField(allow_null=True)
    state = serializers.CharField(allow_null=True)
    replaced = serializers.ListField(child=serializers.CharField())


class BatchAnswer(serializers.Serializer):  # type: ignore[type-arg]
    batch_id = serializers.CharField()
    package = serializers.CharField()
    state = serializers.CharField()
    planned = serializers.IntegerField()
    concurrency = serializers.IntegerField()
    intended_endings = serializers.ListField(child=serializers.CharField())
    runs = BatchRun(many=True)
    report = serializers.DictField(help_text="the batch report so far (report.json)")


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _answer(batch: Batch) -> dict[str, Any]:
    ids = [r["realm_id"] for r in batch.runs if r["realm_id"]]
    states = dict(Realm.objects.filter(realm_id__in=ids).values_list("realm_id", "state"))
    return {
        "batch_id": batch.batch_id,
        "package": batch.package_name,
        "state": batch.state,
        "planned": batch.count,
        "concurrency": batch.concurrency,
        "intended_endings": list(batch.intended),
        "runs": [
            {
                "index": r["index"],
                "parameters": r["parameters"],
                "realm_id": r["realm_id"],
                "state": states.get(r["realm_id"]) if r["realm_id"] else None,
                "replaced": r.get("replaced", []),
            }
            for r in batch.runs
        ],
        "report": summary(batch),
    }


class BatchListView(OperatorAPIView):
    @extend_schema(
        operation_id="batches_start",
        request=BatchStart,
        responses={201: BatchAnswer, 400: Problems, 404: Error, 503: Error},
    )
    def post(self, request: Request) -> Response:
        data = parse(BatchStart, request.data)
        try:
            batch = self._start(data)
        except BatchError as exc:
            return Response(
                {"error": "batch refused", "problems": exc.problems},
                status=status.HTTP_400_BAD_REQUEST,
            )
        except QueueRefused as exc:
            return refusal(exc.status, str(exc))
        except LaunchError as exc:
            return Response(
                {"error": "launch refused", "problems": exc.problems},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response(_answer(batch), status=status.HTTP_201_CREATED)

    def _start(self, data: dict[str, Any]) -> Batch:
        asked = LibraryBatch(
            name=data["package"],
            count=data["n"],
            concurrency=data["concurrency"],
            parameters={k: _text(v) for k, v in data["parameters"].items()},
            grid={k: [_text(v) for v in vs] for k, vs in data["grid"].items()},
            provider=data["provider"],
            intended=data["intended"],
        )
        return start_library_batch(asked, settings.BEARPIT_MAX_ACTIVE_REALMS)


class BatchDetailView(OperatorAPIView):
    @extend_schema(operation_id="batch_status", responses={200: BatchAnswer, 404: Error})
    def get(self, request: Request, batch_id: str) -> Response:
        parse_query(EmptyRequest, request.query_params)
        # An id no batch can have is not looked up (a NUL would not reach the database).
        if not BATCH_ID.fullmatch(batch_id) or not Batch.objects.filter(batch_id=batch_id).exists():
            raise not_found(f"batch {batch_id!r}: no such batch")
        try:
            batch = advance_batch(batch_id, settings.BEARPIT_MAX_ACTIVE_REALMS)
        except (QueueRefused, LaunchError):
            # The runs already launched are still worth reading; the next read retries.
            batch = Batch.objects.get(batch_id=batch_id)
        progress(batch)
        return Response(_answer(batch))
