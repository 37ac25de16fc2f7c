"""REST API for platform teams (DRF). Routers register here as the domains grow."""

from rest_framework.routers import DefaultRouter

router = DefaultRouter()
urlpatterns = router.urls
