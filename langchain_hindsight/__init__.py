"""LangChain and LangGraph integration for Hindsight Memory."""
