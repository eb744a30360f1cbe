"""`format_specifications.json`: the JSON Schemas of the files Execute writes (Init, round 1).

The schemas require what baton's artifact models require (ids, verdicts, conversation +
tool calls + states) and pin down this scenario's own fields on top, so a file that follows
this spec also passes the runtime's validation on `Write`.
"""

from __future__ import annotations

import json
from typing import Any

_DRAFT = "https://json-schema.org/draft/2020-12/schema"
_ID = {"type": "string", "pattern": "^BS_MT_[0-9]{3}$"}
_DATE = {"type": "string", "format": "date"}
_LEAVE_TYPE = {"type": "string", "enum": ["annual", "sick", "personal"]}


def _obj(required: list[str], properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties, **extra}


def _sample() -> dict[str, Any]:
    application = _obj(
        ["leave_type", "start_date", "end_date", "days"],
        {
            "leave_type": _LEAVE_TYPE,
            "start_date": _DATE,
            "end_date": _DATE,
            "start_half": {"enum": ["AM", "PM", None]},
            "end_half": {"enum": ["AM", "PM", None]},
            "days": {"type": "number", "multipleOf": 0.5},
            "reason": {"type": ["string", "null"]},
        },
    )
    outcome = _obj(
        ["action"],
        {
            "action": {"enum": ["submit", "refuse"]},
            "application": application,
            "days_by_year": {"type": "object", "additionalProperties": {"type": "number"}},
            "expected_final_balances": {
                "type": "object",
                "description": "年度 → 假期类型 → 扣减后余额（两位小数）",
            },
            "approver_chain": {"type": "array", "items": {"type": "string"}},
            "violated_rule": {"type": "string", "pattern": "^R[0-9]+$"},
            "state_must_not_change": {"type": "boolean"},
        },
    )
    return {
        "$schema": _DRAFT,
        "title": "samples/<ID>.json",
        **_obj(
            [
                "sample_id",
                "category",
                "description",
                "persona",
                "user_script",
                "initial_state",
                "expected_outcome",
                "applicable_checkers",
            ],
            {
                "sample_id": _ID,
                "category": {"enum": ["single_turn", "multi_turn", "boundary", "policy_violation"]},
                "description": {"type": "string"},
                "iteration": {"type": "integer", "minimum": 1},
                "persona": _obj(
                    ["employee_id", "name", "style"],
                    {
                        "employee_id": {"type": "string"},
                        "name": {"type": "string"},
                        "department": {"type": "string"},
                        "style": {"type": "string"},
                    },
                ),
                "user_goal": {"type": "string"},
                "user_script": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": "用户模拟器按顺序使用的发言；第一条为开场白",
                },
                "initial_state": {
                    "type": "object",
                    "description": "见 unified_scenario_design.yaml 的 state_schema",
                },
                "expected_outcome": outcome,
                "applicable_checkers": {"type": "array", "items": {"type": "string"}},
                "max_turns": {"type": "integer", "maximum": 14},
                "difficulty": {"enum": ["easy", "medium", "hard"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "revision_note": {"type": "string"},
            },
        ),
    }


def _trace() -> dict[str, Any]:
    message = _obj(
        ["role", "content"],
        {
            "role": {"enum": ["user", "assistant"]},
            "content": {"type": "string"},
            "tool_calls": {
                "type": "array",
                "items": {"type": "string"},
                "description": "该条 assistant 消息发起的工具调用名；参数与结果见 tool_calls",
            },
        },
    )
    call = _obj(
        ["name", "arguments", "result", "is_error", "turn"],
        {
            "name": {"type": "string"},
            "arguments": {"type": "object"},
            "result": {"type": "object"},
            "is_error": {"type": "boolean"},
            "turn": {
                "type": "integer",
                "minimum": 0,
                "description": "发起调用的 assistant 消息在 conversation_history 中的下标",
            },
        },
    )
    state = _obj(
        ["at", "state"], {"at": {"enum": ["initial", "final"]}, "state": {"type": "object"}}
    )
    return {
        "$schema": _DRAFT,
        "title": "execution_traces/<ID>_trace.json",
        **_obj(
            ["sample_id", "iteration", "conversation_history", "tool_calls", "states"],
            {
                "sample_id": _ID,
                "iteration": {"type": "integer", "minimum": 1},
                "design_version": {"type": "string"},
                "agent_under_test": {"type": "object"},
                "user_simulator": {"type": "object"},
                "started_at": {"type": "string", "format": "date-time"},
                "finished_at": {"type": "string", "format": "date-time"},
                "conversation_turns": {
                    "type": "integer",
                    "description": "conversation_history 的消息数（user 与 assistant）",
                },
                "conversation_history": {"type": "array", "items": message},
                "tool_calls": {"type": "array", "items": call},
                "states": {"type": "array", "items": state, "minItems": 2},
            },
        ),
    }


def _evaluation() -> dict[str, Any]:
    result = _obj(
        ["checker_id", "passed", "expected", "actual", "evidence"],
        {
            "checker_id": {"type": "string"},
            "passed": {"type": "boolean"},
            "severity": {"enum": ["critical", "high", "medium", "low"]},
            "expected": {},
            "actual": {},
            "evidence": {"type": "string", "description": "引用 state 字段与 trace 中的工具调用"},
        },
    )
    judgement = _obj(
        ["verdict", "score", "rationale"],
        {
            "verdict": {"enum": ["pass", "fail"]},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "rationale": {"type": "string"},
        },
    )
    return {
        "$schema": _DRAFT,
        "title": "evaluation_results/<ID>_eval.json",
        **_obj(
            ["sample_id", "iteration", "passed", "checker_results", "llm_judgement"],
            {
                "sample_id": _ID,
                "iteration": {"type": "integer", "minimum": 1},
                "passed": {
                    "type": "boolean",
                    "description": "所有适用 checker 通过且 verdict == pass",
                },
                "failed_checkers": {"type": "array", "items": {"type": "string"}},
                "checker_results": {"type": "array", "items": result},
                "llm_judgement": judgement,
                "evaluated_at": {"type": "string", "format": "date-time"},
            },
        ),
    }


def _attribution() -> dict[str, Any]:
    return {
        "$schema": _DRAFT,
        "title": "attribution_analysis/<ID>_attribution.json（仅失败样本）",
        **_obj(
            ["sample_id", "failure_type", "layer", "root_cause", "evidence", "suggested_fix"],
            {
                "sample_id": _ID,
                "iteration": {"type": "integer", "minimum": 1},
                "failure_type": {
                    "enum": [
                        "Layer1_BusinessRule",
                        "Layer1_CheckerDesign",
                        "Layer1_ToolSpec",
                        "Layer2_Tool",
                        "Layer2_Checker",
                        "Layer3_Sample",
                        "Layer3_AgentBehavior",
                    ],
                },
                "layer": {"enum": [1, 2, 3]},
                "checkers_failed": {"type": "array", "items": {"type": "string"}},
                "root_cause": {"type": "string"},
                "evidence": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "suggested_fix": {"type": "string"},
                "fix_owner": {"enum": ["init", "execute"]},
                "related_problem_id": {"type": ["string", "null"], "pattern": "^L1P_[0-9]{3}$"},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
        ),
    }


def _examples() -> dict[str, Any]:
    """Abridged example documents, one per schema (values are illustrative)."""
    application = {
        "leave_type": "annual",
        "start_date": "2025-12-17",
        "end_date": "2025-12-19",
        "start_half": None,
        "end_half": None,
        "days": 3.0,
        "reason": "项目上线后休整",
    }
    return {
        "sample": {
            "sample_id": "BS_MT_001",
            "category": "multi_turn",
            "description": "标准 3 天年假（先问可行性再确认）",
            "iteration": 1,
            "persona": {"employee_id": "E1001", "name": "张伟", "style": "先问可行性再确认"},
            "user_script": ["这周三到周五想请三天年假，帮我看看能不能请。", "确认提交。"],
            "initial_state": {"simulated_today": "2025-12-15", "leave_balances": {"E1001": {}}},
            "expected_outcome": {
                "action": "submit",
                "application": application,
                "days_by_year": {"2025": 3.0},
                "expected_final_balances": {"2025": {"annual": 5.0}},
                "approver_chain": ["E2001"],
            },
            "applicable_checkers": [
                "application_created_correctly",
                "leave_balance_deducted",
                "approver_chain_notified",
            ],
        },
        "execution_trace": {
            "sample_id": "BS_MT_001",
            "iteration": 1,
            "conversation_history": [
                {"role": "user", "content": "这周三到周五想请三天年假。"},
                {
                    "role": "assistant",
                    "content": "我先查询余额并核算天数。",
                    "tool_calls": ["query_leave_balance", "calculate_leave_days"],
                },
            ],
            "tool_calls": [
                {
                    "name": "query_leave_balance",
                    "arguments": {"employee_id": "E1001", "leave_type": "annual", "year": 2025},
                    "result": {"balance_days": 8.0},
                    "is_error": False,
                    "turn": 1,
                }
            ],
            "states": [
                {"at": "initial", "state": {"applications": []}},
                {"at": "final", "state": {"applications": ["..."]}},
            ],
        },
        "evaluation_result": {
            "sample_id": "BS_MT_003",
            "iteration": 1,
            "passed": False,
            "failed_checkers": ["approver_chain_notified"],
            "checker_results": [
                {
                    "checker_id": "approver_chain_notified",
                    "passed": False,
                    "severity": "high",
                    "expected": ["E2001", "E3001"],
                    "actual": ["E2001"],
                    "evidence": "5 天年假应通知李娜(E2001)、周强(E3001)；"
                    "缺少周强：未调用 notify_manager",
                }
            ],
            "llm_judgement": {
                "verdict": "fail",
                "score": 0.4,
                "rationale": "Agent 复述了两级审批，却只通知了直属经理。",
            },
        },
        "attribution_analysis": {
            "sample_id": "BS_MT_003",
            "iteration": 1,
            "failure_type": "Layer3_AgentBehavior",
            "layer": 3,
            "checkers_failed": ["approver_chain_notified"],
            "root_cause": "规则第 7 条明确，Agent 漏掉了部门负责人的通知。",
            "evidence": ["tool_calls 中只有一次 notify_manager（E2001）"],
            "suggested_fix": "保留样本；规则无需修改。",
            "fix_owner": "execute",
            "related_problem_id": None,
        },
    }


def format_specifications() -> str:
    """The text of `format_specifications.json`."""
    spec = {
        "spec_version": "1.0",
        "scenario": "leave_application",
        "design_version": "v1",
        "encoding": "UTF-8 JSON，缩进 2 空格，中文不转义",
        "layout": {
            "root": "scenarios/leave_application/execution_outputs/iteration_<N>/",
            "samples": "samples/<ID>.json",
            "execution_traces": "execution_traces/<ID>_trace.json",
            "evaluation_results": "evaluation_results/<ID>_eval.json",
            "attribution_analysis": "attribution_analysis/<ID>_attribution.json",
            "failure_summary": "failure_summary.json",
            "layer1_problems_report": "layer1_problems_report.json",
        },
        "conventions": [
            "sample_id 在各次迭代中保持不变",
            "日期用 YYYY-MM-DD；时间戳用 ISO 8601（UTC，Z 结尾）",
            "天数与余额用数字（天），不写单位",
            "failure_summary.json 的 success_rate = passed_samples / total_samples（小数，保留 "
            "4 位）",
            "failure_summary.json 与 layer1_problems_report.json 的字段以 seed 001（Context "
            "传递策略 v2.0）为准",
        ],
        "schemas": {
            "sample": _sample(),
            "execution_trace": _trace(),
            "evaluation_result": _evaluation(),
            "attribution_analysis": _attribution(),
        },
        "examples": _examples(),
    }
    return json.dumps(spec, ensure_ascii=False, indent=2) + "\n"
